//! The database: either the server named by DATABASE_URL, or a private PostgreSQL cluster
//! that burnrate runs itself under the data directory. Migrations run on every open.

pub mod private_cluster;

use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::{MigrateDatabase, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgPool, Postgres};

use crate::config::{Config, Timeouts};
use private_cluster::PrivateCluster;

/// The schema, embedded at build time.
pub static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

/// Connections per process: a page's first view takes two at once (its longest statement
/// beside the rest), so it takes eight different first views at once to fill it; well
/// under PostgreSQL's default limit of 100 for a few replicas.
const POOL_SIZE: u32 = 16;

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("private PostgreSQL cluster: {0}")]
    Cluster(String),
    #[error("database: {0}")]
    Sql(#[from] sqlx::Error),
    #[error("migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

/// An open, migrated database, and the private cluster behind it if burnrate started one.
pub struct Database {
    pub pool: PgPool,
    cluster: Option<PrivateCluster>,
}

impl Database {
    /// Connects (starting the private cluster when DATABASE_URL is unset), creates the
    /// database if missing, and applies pending migrations. Every connection bounds each
    /// statement by `BURNRATE_DB_STATEMENT_TIMEOUT` and each lock wait by
    /// `BURNRATE_DB_LOCK_TIMEOUT`: what serves pages and server functions. Bulk work on
    /// these connections (ingestion, the demo) lifts the statement bound itself.
    pub async fn open(config: &Config) -> Result<Database, DbError> {
        Database::open_with(config, Some(config.timeouts.db_statement)).await
    }

    /// The same for commands that read or write in bulk (`demo`, `export`, `bench`,
    /// `migrate`): lock waits are bounded, statements are not.
    pub async fn open_for_batch(config: &Config) -> Result<Database, DbError> {
        Database::open_with(config, None).await
    }

    async fn open_with(config: &Config, statement_timeout: Option<Duration>) -> Result<Database, DbError> {
        let (options, cluster) = match &config.database_url {
            Some(url) => {
                if !Postgres::database_exists(url).await? {
                    tracing::info!("creating the database named in DATABASE_URL");
                    Postgres::create_database(url).await?;
                }
                (PgConnectOptions::from_str(url)?, None)
            }
            None => {
                let cluster = PrivateCluster::start(&config.data_dir)
                    .await
                    .map_err(DbError::Cluster)?;
                (cluster.connect_options(), Some(cluster))
            }
        };
        tracing::info!(
            host = options.get_host(),
            port = options.get_port(),
            database = options.get_database().unwrap_or(""),
            "connecting to PostgreSQL"
        );
        let mut session = vec![("lock_timeout", Timeouts::pg(config.timeouts.db_lock))];
        if let Some(bound) = statement_timeout {
            session.push(("statement_timeout", Timeouts::pg(bound)));
        }
        let pool = match connect(options.options(session)).await {
            Ok(pool) => pool,
            Err(err) => {
                if let Some(cluster) = cluster {
                    cluster.stop().await;
                }
                return Err(err.into());
            }
        };
        let db = Database { pool, cluster };
        if let Err(err) = migrate(&db.pool).await {
            db.close().await;
            return Err(err);
        }
        Ok(db)
    }

    /// Closes the pool, then stops the private cluster if this process started it.
    /// Waits at most [`CLOSE_DEADLINE`] for connections still in use (a request cut at the
    /// shutdown deadline may hold one), so the private cluster is always stopped.
    pub async fn close(self) {
        if tokio::time::timeout(CLOSE_DEADLINE, self.pool.close()).await.is_err() {
            tracing::warn!(deadline = ?CLOSE_DEADLINE, "database connections still in use at exit are dropped");
        }
        if let Some(cluster) = self.cluster {
            cluster.stop().await;
        }
    }
}

/// How long closing waits for pooled connections to be returned.
const CLOSE_DEADLINE: Duration = Duration::from_secs(10);

/// Applies pending migrations on a connection of their own, without the statement bound:
/// a migration may rewrite a large table. The connection is closed afterwards.
async fn migrate(pool: &PgPool) -> Result<(), DbError> {
    let mut conn = pool.acquire().await?.detach();
    lift_statement_timeout(&mut conn).await?;
    MIGRATOR.run(&mut conn).await?;
    Ok(())
}

/// Lets this session's statements run as long as they need (bulk loads and rewrites). Use
/// it on a detached connection, or `set local` inside a transaction, so the setting never
/// reaches a pooled connection that serves requests.
pub async fn lift_statement_timeout(conn: &mut sqlx::PgConnection) -> Result<(), sqlx::Error> {
    sqlx::query("set statement_timeout = 0").execute(conn).await?;
    Ok(())
}

/// The same for the current transaction only.
pub async fn lift_statement_timeout_in_transaction(conn: &mut sqlx::PgConnection) -> Result<(), sqlx::Error> {
    sqlx::query("set local statement_timeout = 0").execute(conn).await?;
    Ok(())
}

/// A pooled connection idle for longer than this is pinged before use.
const PING_AFTER_IDLE: Duration = Duration::from_secs(30);

/// Statements slower than this are logged, at INFO: ingestion, rewrites and exports at 10M
/// facts run for seconds or minutes by design, and pages are bounded by the statement
/// timeout (sqlx's default, WARN after 1 s, made a WARN of every bulk statement).
const SLOW_STATEMENT: Duration = Duration::from_secs(5);

async fn connect(options: PgConnectOptions) -> Result<PgPool, sqlx::Error> {
    use sqlx::ConnectOptions;
    let options = options.log_slow_statements(log::LevelFilter::Info, SLOW_STATEMENT);
    PgPoolOptions::new()
        .max_connections(POOL_SIZE)
        .acquire_timeout(Duration::from_secs(10))
        // sqlx pings every connection it hands out: a round trip per query, which was an
        // eighth of the server's CPU when rendering pages under load. A connection in
        // steady use is known to be alive; one that sat idle (the database may have
        // restarted meanwhile) is still checked, and a dead one is replaced.
        .test_before_acquire(false)
        .before_acquire(|connection, meta| {
            Box::pin(async move {
                if meta.idle_for > PING_AFTER_IDLE {
                    connection.ping().await?;
                }
                Ok(true)
            })
        })
        .connect_with(options)
        .await
}

/// True when every embedded migration has been applied successfully.
pub async fn migrations_applied(pool: &PgPool) -> Result<bool, sqlx::Error> {
    let applied: Vec<i64> = sqlx::query_scalar("select version from _sqlx_migrations where success order by version")
        .fetch_all(pool)
        .await?;
    Ok(MIGRATOR
        .iter()
        .filter(|m| m.migration_type.is_up_migration())
        .all(|m| applied.contains(&m.version)))
}
