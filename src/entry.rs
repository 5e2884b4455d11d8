//! The process around one command, shared by `tidings` and `tidings-bench`: the shared
//! settings checked (exit code 2 on a bad one), logging, the TLS provider, the async runtime,
//! and the exit code and message an error ends with.

use std::future::Future;
use std::process::ExitCode;

use crate::config::{self, EXIT_CONFIG, GlobalArgs, GlobalConfig, LogFormat};
use crate::output;

/// Checks `global`, sets up logging and the runtime, runs `command` and turns its outcome into
/// the process's exit code; `program` prefixes the messages printed on standard error.
pub fn run<F, Fut>(program: &str, global: &GlobalArgs, command: F) -> ExitCode
where
    F: FnOnce(GlobalConfig) -> Fut,
    Fut: Future<Output = anyhow::Result<ExitCode>>,
{
    // First, while this is the only thread: an arena limit binds only threads without one.
    crate::allocator::configure();
    let config = match global.check() {
        Ok(config) => config,
        Err(error) => {
            eprintln!("{program}: {error}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    init_logging(program, &config);
    // reqwest is built without a default TLS provider; install ring once for the process.
    let _ = rustls::crypto::ring::default_provider().install_default();

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("{program}: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(command(config)) {
        Ok(code) => code,
        // The reader of standard output went away (`tidings parse feed.xml | head`): what it
        // wanted was written, so stop quietly as other command-line tools do.
        Err(error) if output::is_closed_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => match error.downcast_ref::<config::ConfigError>() {
            Some(config_error) => {
                eprintln!("{program}: {config_error}");
                ExitCode::from(EXIT_CONFIG)
            }
            None => {
                eprintln!("{program}: {}", output::describe(&error));
                ExitCode::FAILURE
            }
        },
    }
}

fn init_logging(program: &str, config: &GlobalConfig) {
    let builder = tracing_subscriber::fmt()
        .with_env_filter(config.log_filter.clone())
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let result = match config.log_format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    if let Err(error) = result {
        eprintln!("{program}: logging could not be set up: {error}");
    }
}
