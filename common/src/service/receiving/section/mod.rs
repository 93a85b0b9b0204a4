//! Receiving: the inbox and drafts: the operations this capability declares, each
//! beside the service it runs, one file per section. The api module gathers
//! every section into the catalogue (REST, MCP and OpenAPI come from it).

mod conversation;
mod drafts;
mod inbox;

pub use conversation::CONVERSATION;
pub use drafts::DRAFTS;
pub use inbox::INBOX;
