//! The store's error type.

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database URL could not be understood.
    #[error("bad database URL {url}: {reason}")]
    BadUrl {
        /// The URL, password redacted.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The database could not be reached or opened.
    #[error("cannot open database {url}: {source}")]
    Connect {
        /// The URL, password redacted.
        url: String,
        /// The driver's error.
        #[source]
        source: sqlx::Error,
    },
    /// A SQLite database file that must exist does not (see
    /// [`StoreOptions::create_if_missing`](crate::StoreOptions::create_if_missing)).
    #[error("no database at {}", path.display())]
    NoDatabase {
        /// The file looked for, absolute.
        path: std::path::PathBuf,
    },
    /// The object asked for does not exist (or is not the caller's).
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The change would break a uniqueness rule, e.g. a user name already taken.
    #[error("{0}")]
    Conflict(String),
    /// The input breaks a rule of the data model, e.g. an interval outside 30–720 minutes.
    #[error("{0}")]
    Invalid(String),
    /// A per-user limit would be exceeded, e.g. the number of subscriptions (F29).
    #[error("the limit of {limit} {what} is reached")]
    LimitReached {
        /// What is counted, in the plural ("subscriptions").
        what: &'static str,
        /// The limit.
        limit: i64,
    },
    /// Applying or checking migrations failed.
    #[error("migration failed: {0}")]
    Migration(String),
    /// Any other database error.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
}

impl StoreError {
    /// Whether the database cannot answer now, though the request itself is fine: the server
    /// is unreachable (refused, broken or timed-out connections, no free connection in time,
    /// PostgreSQL shutting down, starting or out of connections) or, on SQLite, the database
    /// stayed locked past the busy timeout. Trying again shortly may succeed, so the API
    /// answers 503 with `Retry-After` rather than 500.
    pub fn is_unavailable(&self) -> bool {
        match self {
            StoreError::Connect { .. } => true,
            StoreError::Database(error) => StoreError::is_unavailable_error(error),
            _ => false,
        }
    }

    /// Whether the database server cannot be reached now but may be soon, so that a process
    /// starting up should wait for it rather than exit: the connection was refused, reset or
    /// timed out, the network or host is unreachable, or PostgreSQL says it is starting up,
    /// shutting down or out of connections. Not an error that waiting cannot fix: a bad URL,
    /// a wrong password, a database that does not exist, a migration that fails, or a SQLite
    /// file that cannot be opened or is locked.
    pub fn is_unreachable(&self) -> bool {
        match self {
            StoreError::Connect { source, .. } | StoreError::Database(source) => {
                StoreError::is_unreachable_error(source)
            }
            _ => false,
        }
    }

    /// [`StoreError::is_unreachable`] for a driver error.
    fn is_unreachable_error(error: &sqlx::Error) -> bool {
        use std::io::ErrorKind;
        match error {
            sqlx::Error::PoolTimedOut => true,
            sqlx::Error::Io(io) => matches!(
                io.kind(),
                ErrorKind::ConnectionRefused
                    | ErrorKind::ConnectionReset
                    | ErrorKind::ConnectionAborted
                    | ErrorKind::NotConnected
                    | ErrorKind::BrokenPipe
                    | ErrorKind::UnexpectedEof
                    | ErrorKind::TimedOut
                    | ErrorKind::HostUnreachable
                    | ErrorKind::NetworkUnreachable
                    | ErrorKind::NetworkDown
                    | ErrorKind::AddrNotAvailable
            ),
            sqlx::Error::Database(db) => db
                .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
                .is_some_and(|pg| is_postgres_unreachable_code(pg.code())),
            _ => false,
        }
    }

    /// [`StoreError::is_unavailable`] for a driver error.
    fn is_unavailable_error(error: &sqlx::Error) -> bool {
        match error {
            sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::WorkerCrashed => true,
            sqlx::Error::Database(db) => {
                if let Some(pg) = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
                    is_postgres_unreachable_code(pg.code())
                } else {
                    StoreError::is_sqlite_busy(error)
                }
            }
            _ => false,
        }
    }

    /// Whether the error is the database reporting a unique-constraint violation.
    pub(crate) fn is_unique_violation(error: &sqlx::Error) -> bool {
        matches!(error, sqlx::Error::Database(db) if db.is_unique_violation())
    }

    /// Whether the error is SQLite's "database is locked" or "table is locked" (any extended
    /// code), which a retry may get past.
    pub(crate) fn is_sqlite_busy(error: &sqlx::Error) -> bool {
        let sqlx::Error::Database(db) = error else {
            return false;
        };
        // PostgreSQL's SQLSTATE codes are digits too (22021 has low byte 5): only SQLite's count.
        if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_none() {
            return false;
        }
        let code = db.code().and_then(|c| c.parse::<i32>().ok()).unwrap_or(0);
        // The primary result code is the low byte: 5 is SQLITE_BUSY, 6 is SQLITE_LOCKED.
        matches!(code & 0xff, 5 | 6)
    }
}

/// Whether a PostgreSQL SQLSTATE says the server cannot serve now but may soon. Class 08:
/// connection exceptions; 57P01–57P03: the server is shutting down, crashed or is starting;
/// 53300: too many connections.
fn is_postgres_unreachable_code(code: &str) -> bool {
    code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "53300")
}
