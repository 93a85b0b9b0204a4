//! Sends that wait: for the owner's approval (held, a scoped key's
//! `approval` rule) or for their time (scheduled: `sendAt`, `undoSeconds`).
//! The message is checked, built and signed when the send is accepted (202);
//! it goes out later through the same `dispatch` as any send, exactly once:
//! whoever moves its status from `waiting` to `sending` with a conditional
//! write sends it, and every other approver or runner finds it taken.
//!
//! Going out passes the same switches as a send at once (sending paused, the
//! agent key frozen) and needs the key that asked for it to be still there
//! (`going`); a send the switches hold waits on, up to its own expiry.
//!
//! Credits: a scheduled send is charged when accepted and refunded when
//! cancelled or refused later; a held send is charged when approved. The
//! refund follows the conditional write that ended the send (`settle`),
//! never a read made before it.
//!
//! Items: `PEND#<id>/P` the send; `HOLDS#<uid>/<ms>-<id>` an account's holds
//! (GET /holds); `WAITING#<uid>/<ms>-<id>` its sends still waiting (GET
//! /outbox/waiting, and what revoking a key cancels); `DUE/<dueAt>#<id>` a
//! scheduled send's place in the queue the runner reads;
//! `PENDMID#<owner>/<messageId>` its Message-ID (cancel); (`contacts` says
//! who a sender knows). The message itself is the blob `pending/<id>.eml`.

mod going;
mod record;
mod routes;
mod settle;

pub use going::{DueRun, release, run_due};
pub use record::*;
pub use routes::*;
pub use settle::cancel_asked_by;
