//! What the tests of the workspace share, in one place instead of copies per crate: every
//! storage test on both engines ([`engines`]), one rule for tests that cannot run here
//! ([`skip`]), one local HTTP server that counts what it is asked ([`http`]), one feed builder
//! ([`feeds`]), waiting for a condition ([`wait`]), child processes that never outlive a
//! failed test ([`process`]), and a PostgreSQL server of a test's own ([`private_postgres`]).
//!
//! Never shipped (`publish = false`): the crates use it as a dev-dependency, and only the
//! bench tool (`tidings-bench soak`, which stops and starts its own PostgreSQL) as a dependency. Each
//! crate's integration tests are one binary (`tests/main.rs` naming every test file as a
//! module); [`layout`] checks that no test file is left out of it.

pub mod engines;
pub mod feeds;
pub mod http;
pub mod layout;
pub mod private_postgres;
pub mod process;
pub mod skip;
pub mod wait;

pub use engines::{
    ITEMS_BASE, POSTGRES_ENV, TestDb, add_items, add_user, follow, follow_on_old_schema,
    listed_titles, numbered_item, run_on,
};
pub use http::TestServer;
pub use wait::wait_until;
