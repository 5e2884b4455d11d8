//! The HTTP client's integration tests, one binary: real requests to local servers
//! (`tidings_testkit::TestServer`). Cargo does not find test files by itself here
//! (`autotests = false`): a new file is declared below, which testkit checks.

mod client;
mod env_proxy;
mod guard;
mod support;
