//! The floor every handler stands on: the application's state, the API's errors and
//! extractors, who is calling (authentication, the client's address, its rate-limit slot), the
//! limits on what requests may hold, the time format, and what several handlers show or do
//! alike: items and their listings, users, sessions, subscribing, usage counts. The REST API
//! (`crate::api`), the sync APIs (`crate::sync`), the second factors, OpenID Connect and the
//! middleware import from here, never from each other, so a handler can change without
//! touching another.
//!
//! Nothing here imports a handler or a router, and this module only declares its parts, which
//! import each other one way: the state, the client and the errors first, then limits,
//! extractors, authentication and times, then the views built on them.

pub mod auth;
pub mod client;
pub mod error;
pub mod extract;
pub mod inbound;
pub mod item_list;
pub mod items;
pub mod limits;
pub mod search;
pub mod sessions;
pub mod state;
pub mod subscriptions;
pub mod time;
pub mod translations;
pub mod usage;
pub mod users;
