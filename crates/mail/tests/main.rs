//! The mail reader on real-world-shaped messages (`testdata/`): encodings, parts, pixels,
//! attachments, and broken input that must give an error or a best reading, never a panic.
//! Cargo does not find test files by itself here (`autotests = false`): a new file is declared
//! below.

mod messages;
