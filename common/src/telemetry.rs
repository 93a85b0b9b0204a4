//! Structured logs through tracing: JSON lines under Lambda, readable text
//! locally. `RUST_LOG` filters as usual.

pub fn init(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colour only on a terminal: piped logs stay plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(ansi);
    let _ = if json {
        builder.json().without_time().try_init()
    } else {
        builder.try_init()
    };
}
