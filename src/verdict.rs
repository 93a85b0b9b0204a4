//! `mailhost deliver --verdict-header`: the content verdict rspamd's milter
//! wrote into a message on this mail host, taken out of the message and
//! handed on in the envelope line (`common::mail::spam`).

use std::path::Path;

use common::mail::spam::{self, SpamVerdict};

/// The message without the verdict header, and the verdict. The file is
/// rewritten without the header too, so the copy the pipe hands Dovecot next
/// never shows it (its name carries the host's secret).
pub fn take(file: &Path, raw: Vec<u8>, header: &str) -> anyhow::Result<(Vec<u8>, Option<SpamVerdict>)> {
    let taken = spam::take_header(&raw, header);
    if taken.found == 0 {
        return Ok((raw, None));
    }
    if taken.verdict.is_none() {
        eprintln!("{}: {} verdict headers, none believed", file.display(), taken.found);
    }
    std::fs::write(file, &taken.message).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    Ok((taken.message, taken.verdict))
}
