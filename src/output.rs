//! Standard output for the subcommands. `println!` panics when the reader of a pipe has gone
//! (`tidings parse feed.xml | head`); these macros return the write error instead, and `main`
//! ends the command quietly when that error is a closed pipe.

use std::io::Write;

/// Writes formatted text to standard output.
pub fn write_stdout(args: std::fmt::Arguments<'_>) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_fmt(args)?;
    stdout.flush()
}

/// Whether an error (or one of its causes) is a write to a pipe nobody reads any more.
pub fn is_closed_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// An error and its causes on one line, each cause once: many errors already put their
/// cause in their own message (`cannot open database …: connection refused`) and also expose
/// it as their source, so printing the whole chain (`{:#}`) would repeat it.
pub fn describe(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let part = cause.to_string();
        if !text.contains(&part) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
    }
    text
}

/// `print!` that returns from the enclosing function with the error when standard output is
/// closed, instead of panicking.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!($($arg)*))?
    };
}

/// `println!` that returns from the enclosing function with the error when standard output is
/// closed, instead of panicking.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::output::write_stdout(format_args!("\n"))?
    };
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!("{}\n", format_args!($($arg)*)))?
    };
}

pub use crate::{out, outln};

#[cfg(test)]
mod tests {
    use super::describe;

    /// An error that names its cause in its message and also exposes it as its source.
    #[derive(Debug)]
    struct Wrapping {
        source: std::io::Error,
    }

    impl std::fmt::Display for Wrapping {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "cannot open database x: {}", self.source)
        }
    }

    impl std::error::Error for Wrapping {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.source)
        }
    }

    #[test]
    fn each_cause_is_printed_once() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
        let error = anyhow::Error::new(Wrapping { source: io }).context("tidings migrate");
        assert_eq!(
            describe(&error),
            "tidings migrate: cannot open database x: connection refused"
        );
        let plain = anyhow::anyhow!("inner").context("outer");
        assert_eq!(describe(&plain), "outer: inner");
    }
}
