//! The feed parser's integration tests, one binary: the corpus and its snapshots, resource
//! limits, and the sanitizer against XSS. Cargo does not find test files by itself here
//! (`autotests = false`): a new file is declared below, which testkit checks.

mod corpus;
mod cpu;
mod limits;
mod xss;
