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

/// `print!` that returns from the enclosing function with the error when standard output is
/// closed, instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!($($arg)*))?
    };
}

/// `println!` that returns from the enclosing function with the error when standard output is
/// closed, instead of panicking.
macro_rules! outln {
    () => {
        $crate::output::write_stdout(format_args!("\n"))?
    };
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!("{}\n", format_args!($($arg)*)))?
    };
}

pub(crate) use {out, outln};
