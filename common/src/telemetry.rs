//! Structured logs through tracing: JSON lines under Lambda, readable text
//! locally. `RUST_LOG` filters as usual.
//!
//! Under Lambda each line goes straight to stdout: the environment may be
//! frozen as soon as a response is out, so nothing waits in a buffer. Locally
//! lines collect in memory and a background thread writes them every 50 ms
//! (or once 64 KiB wait), so a request costs no write system call of its own;
//! [`flush`] writes what is left at shutdown.
//!
//! Local lines are plain `name=value` fields: the default formatter styles
//! each field name and scans the message for escape sequences, which was
//! nearly half of a request's log cost (benches/instructions.sh). With no styling, no
//! escape character belongs in a line, so the writer replaces any that a
//! value carries: a logged value cannot start a terminal escape sequence.

use std::io::Write;
use std::sync::{Mutex, Once};
use std::time::Duration;

pub fn init(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(false);
    let _ = if json {
        // Under Lambda the business metrics go to stdout as EMF beside the log.
        crate::metrics::write_emf();
        builder.json().without_time().try_init()
    } else {
        start_flusher();
        builder.fmt_fields(plain_fields()).with_writer(|| Buffered).try_init()
    };
}

/// `message name=value name=value`: strings quoted and escaped (`Debug`).
fn plain_fields() -> impl for<'w> tracing_subscriber::fmt::FormatFields<'w> {
    use tracing_subscriber::field::MakeExt;
    tracing_subscriber::fmt::format::debug_fn(|w, field, value| match field.name() {
        "message" => write!(w, "{value:?}"),
        name => write!(w, "{name}={value:?}"),
    })
    .delimited(" ")
}

/// Writes the buffered log lines now.
pub fn flush() {
    let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    if pending.is_empty() {
        return;
    }
    // Taken and written under the buffer's lock, so lines keep their order.
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&pending);
    let _ = out.flush();
    pending.clear();
}

const FLUSH_EVERY: Duration = Duration::from_millis(50);
const FLUSH_AT: usize = 64 * 1024;

static PENDING: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// ESC, which starts every terminal control sequence.
const ESCAPE: u8 = 0x1b;

fn start_flusher() {
    static STARTED: Once = Once::new();
    STARTED.call_once(|| {
        let _ = std::thread::Builder::new().name("log-flush".into()).spawn(|| {
            loop {
                std::thread::sleep(FLUSH_EVERY);
                flush();
            }
        });
    });
}

/// A log line's writer: appends to the shared buffer.
struct Buffered;

impl Write for Buffered {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let full = {
            let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
            let start = pending.len();
            pending.extend_from_slice(buf);
            for byte in &mut pending[start..] {
                if *byte == ESCAPE {
                    *byte = b'?';
                }
            }
            pending.len() >= FLUSH_AT
        };
        if full {
            flush();
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test: the buffer is shared by the whole process.
    #[test]
    fn buffered_lines_keep_their_order_and_lose_escape_characters_until_flushed() {
        let mut w = Buffered;
        w.write_all(b"first\n").unwrap();
        w.write_all(b"second value=\"\x1b[2J\x1b]0;owned\x07\"\n").unwrap();
        let pending = PENDING.lock().unwrap().clone();
        let text = String::from_utf8(pending).unwrap();
        assert!(text.find("first").unwrap() < text.find("second").unwrap(), "{text}");
        assert!(text.contains("second value=\"?[2J?]0;owned\x07\"\n"), "{text}");
        flush();
        assert!(PENDING.lock().unwrap().is_empty());
    }
}
