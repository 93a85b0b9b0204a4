//! Every operation, once. Adding a route or a tool is adding an entry here;
//! the service it names must exist with the input and output it names, or
//! the crate does not compile.

use super::{Family::*, Hints, Operation, get, io, post, tool};
use crate::auth::Access::*;
use crate::error::*;
use crate::service::credits;
use crate::validate::NoInput;

pub static CATALOGUE: &[Operation] = &[
    // ------------------------------------------------------------------ credits
    Operation {
        id: "getCredits",
        rest: get("/credits"),
        tool: None,
        family: Credits,
        access: CreditsRead,
        summary: "Read the credit balance and the sending switches",
        description: "The caller's credit balance (a standard key reads its own account's; the agent key and \
                      signed-in people read the agent key's), the agent key's state, and whether sending is on. \
                      Free.",
        errors: &[],
        io: io!(credits::get_credits, NoInput, credits::CreditsPayload),
    },
    Operation {
        id: "controlCredits",
        rest: post("/credits"),
        tool: None,
        family: Credits,
        access: CreditsControl,
        summary: "Freeze or unfreeze the agent key, or pause all sending",
        description: "The agent key may set `disabled` and `frozenUntil`; an operator may also set \
                      `sendingEnabled`. Takes effect on the next send. Free.",
        errors: &[FROZEN_UNTIL_INVALID, CONTROL_REFUSED],
        io: io!(credits::control, credits::Control, credits::CreditsPayload),
    },
    Operation {
        id: "getRemainingCredits",
        rest: None,
        tool: tool("get_credits", Hints::READ),
        family: Credits,
        access: CreditsRead,
        summary: "Read how many credits are left",
        description: "Credits left on the caller's balance: one is spent per send_mail. Free.",
        errors: &[],
        io: io!(credits::get_remaining, NoInput, credits::Remaining),
    },
];
