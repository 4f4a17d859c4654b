//! A private PostgreSQL cluster under the data directory, for zero-configuration starts.
//!
//! It listens on a Unix socket only (no TCP port), inside a directory only its owner can
//! enter. PostgreSQL refuses to run as root, so when burnrate runs as root the cluster runs
//! as the `postgres` user (or `nobody`). A cluster that is already running is reused and
//! left running; one this process started is stopped by [`PrivateCluster::stop`].

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use sqlx::postgres::PgConnectOptions;
use tokio::process::Command;

/// The role and database burnrate uses inside its private cluster.
const ROLE: &str = "burnrate";
/// Names the socket file (`.s.PGSQL.5432`); nothing listens on TCP.
const PORT: u16 = 5432;
/// Unix socket paths are limited to 107 bytes on Linux.
const MAX_SOCKET_PATH: usize = 100;

/// A running private cluster.
#[derive(Debug)]
pub struct PrivateCluster {
    root: PathBuf,
    pg_ctl: PathBuf,
    run_as: Option<(u32, u32)>,
    started_here: bool,
}

impl PrivateCluster {
    /// Initialises the cluster on first use, starts it unless it is already running, and
    /// makes sure the `burnrate` database exists.
    pub async fn start(data_dir: &Path) -> Result<PrivateCluster, String> {
        let bin_dir = find_bin_dir()?;
        std::fs::create_dir_all(data_dir).map_err(|e| format!("cannot create {}: {e}", data_dir.display()))?;
        let data_dir = data_dir
            .canonicalize()
            .map_err(|e| format!("cannot resolve {}: {e}", data_dir.display()))?;
        let root = data_dir.join("postgres");
        let run_as = unprivileged_user()?;
        prepare_root(&root, run_as)?;

        let socket = root.join("run").join(format!(".s.PGSQL.{PORT}"));
        if socket.as_os_str().len() > MAX_SOCKET_PATH {
            return Err(format!(
                "the socket path {} is too long for a Unix socket; set BURNRATE_DATA_DIR to a shorter path",
                socket.display()
            ));
        }
        let mut cluster = PrivateCluster {
            root,
            pg_ctl: bin_dir.join("pg_ctl"),
            run_as,
            started_here: false,
        };

        if !cluster.pgdata().join("PG_VERSION").exists() {
            tracing::info!(dir = %cluster.pgdata().display(), "initialising a private PostgreSQL cluster");
            let pgdata = cluster.pgdata();
            let args: [&OsStr; 9] = [
                "-D".as_ref(),
                pgdata.as_os_str(),
                "-U".as_ref(),
                ROLE.as_ref(),
                "--auth=trust".as_ref(),
                "--encoding=UTF8".as_ref(),
                "--no-locale".as_ref(),
                "--no-instructions".as_ref(),
                "--no-sync".as_ref(),
            ];
            cluster.run(&bin_dir.join("initdb"), &args).await?;
        }

        if cluster.is_running().await {
            tracing::info!("reusing the private PostgreSQL cluster that is already running");
        } else {
            tracing::info!(dir = %cluster.root.display(), "starting the private PostgreSQL cluster");
            let options = format!(
                "-c listen_addresses='' -p {PORT} -k {} -c unix_socket_permissions=0700",
                cluster.root.join("run").display()
            );
            let pgdata = cluster.pgdata();
            let log = cluster.root.join("server.log");
            let args: [&OsStr; 9] = [
                "start".as_ref(),
                "-D".as_ref(),
                pgdata.as_os_str(),
                "-l".as_ref(),
                log.as_os_str(),
                "-w".as_ref(),
                "-t".as_ref(),
                "60".as_ref(),
                "-o".as_ref(),
            ];
            let mut args = args.to_vec();
            args.push(options.as_ref());
            let pg_ctl = cluster.pg_ctl.clone();
            cluster
                .run(&pg_ctl, &args)
                .await
                .map_err(|e| format!("{e}; see {}", log.display()))?;
            cluster.started_here = true;
        }
        if let Err(err) = cluster.ensure_database().await {
            cluster.stop().await;
            return Err(err);
        }
        Ok(cluster)
    }

    /// How to reach the `burnrate` database over the cluster's socket.
    pub fn connect_options(&self) -> PgConnectOptions {
        self.admin_options().database(ROLE)
    }

    /// Stops the cluster if this process started it; a reused cluster keeps running.
    pub async fn stop(self) {
        if !self.started_here {
            return;
        }
        let pgdata = self.pgdata();
        let args: [&OsStr; 6] = [
            "stop".as_ref(),
            "-D".as_ref(),
            pgdata.as_os_str(),
            "-m".as_ref(),
            "fast".as_ref(),
            "-w".as_ref(),
        ];
        match self.run(&self.pg_ctl, &args).await {
            Ok(()) => tracing::info!("stopped the private PostgreSQL cluster"),
            Err(err) => {
                tracing::error!(error = %err, "could not stop the private PostgreSQL cluster")
            }
        }
    }

    /// The cluster's data directory (PGDATA).
    pub fn pgdata(&self) -> PathBuf {
        self.root.join("data")
    }

    fn admin_options(&self) -> PgConnectOptions {
        PgConnectOptions::new()
            .host(&self.root.join("run").to_string_lossy())
            .port(PORT)
            .username(ROLE)
            .database("postgres")
    }

    async fn is_running(&self) -> bool {
        let pgdata = self.pgdata();
        let args: [&OsStr; 3] = ["status".as_ref(), "-D".as_ref(), pgdata.as_os_str()];
        self.run(&self.pg_ctl, &args).await.is_ok()
    }

    async fn ensure_database(&self) -> Result<(), String> {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect_with(&self.admin_options())
            .await
            .map_err(|e| format!("cannot connect over {}: {e}", self.root.join("run").display()))?;
        let exists: bool = sqlx::query_scalar("select exists (select 1 from pg_database where datname = $1)")
            .bind(ROLE)
            .fetch_one(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        if !exists {
            sqlx::query(&format!("create database {ROLE}"))
                .execute(&mut conn)
                .await
                .map_err(|e| e.to_string())?;
        }
        conn.close().await.map_err(|e| e.to_string())
    }

    /// Runs a PostgreSQL tool as the cluster's owner; fails with its output on a non-zero exit.
    async fn run(&self, program: &Path, args: &[&OsStr]) -> Result<(), String> {
        let mut command = std::process::Command::new(program);
        command.args(args).current_dir(&self.root).env_remove("PGDATA");
        if let Some((uid, gid)) = self.run_as {
            // std also drops root's supplementary groups when it switches uid.
            command.uid(uid).gid(gid).env("HOME", &self.root);
        }
        let output = Command::from(command)
            .kill_on_drop(true)
            .output()
            .await
            .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
        if output.status.success() {
            Ok(())
        } else {
            let name = program.file_name().unwrap_or_default().to_string_lossy();
            Err(format!(
                "{name} failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ))
        }
    }
}

/// The directory with initdb, pg_ctl and postgres: from PATH, else the newest
/// /usr/lib/postgresql/*/bin.
pub fn find_bin_dir() -> Result<PathBuf, String> {
    let on_path = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .unwrap_or_default();
    let has_tools = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Some(dir) = on_path.into_iter().find(|d| has_tools(d)) {
        // Debian links /usr/local/bin/initdb to /usr/lib/postgresql/N/bin; keep tools together.
        let resolved = dir
            .join("initdb")
            .canonicalize()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf));
        return Ok(resolved.filter(|d| has_tools(d)).unwrap_or(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| {
                    let version = e.file_name().to_str()?.parse::<u32>().ok()?;
                    let bin = e.path().join("bin");
                    has_tools(&bin).then_some((version, bin))
                })
                .collect()
        })
        .unwrap_or_default();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).ok_or_else(|| {
        "PostgreSQL server binaries (initdb, pg_ctl) were not found on PATH or under /usr/lib/postgresql/*/bin; \
         install them (Debian/Ubuntu: apt-get install postgresql) or set DATABASE_URL"
            .to_string()
    })
}

/// Whether burnrate runs as root. std has no geteuid, and reading `/proc` would depend on
/// how it is mounted.
#[allow(
    unsafe_code,
    reason = "geteuid is the one libc call burnrate makes; it has no preconditions"
)]
fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `Some((uid, gid))` of the account the cluster runs as when burnrate runs as root.
fn unprivileged_user() -> Result<Option<(u32, u32)>, String> {
    if !running_as_root() {
        return Ok(None);
    }
    let passwd = std::fs::read_to_string("/etc/passwd").map_err(|e| format!("cannot read /etc/passwd: {e}"))?;
    let lookup = |name: &str| {
        passwd.lines().find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.len() > 3 && fields[0] == name)
                .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
                .flatten()
        })
    };
    lookup("postgres")
        .or_else(|| lookup("nobody"))
        .map(Some)
        .ok_or_else(|| "running as root, and neither a `postgres` nor a `nobody` user exists to run PostgreSQL".into())
}

/// Creates the cluster's root directory, owned by the account that runs the cluster and
/// closed to everyone else, and checks that account can reach it.
fn prepare_root(root: &Path, run_as: Option<(u32, u32)>) -> Result<(), String> {
    for dir in [root.to_path_buf(), root.join("run")] {
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        if let Some((uid, gid)) = run_as {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
                .map_err(|e| format!("cannot hand {} to uid {uid}: {e}", dir.display()))?;
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("cannot restrict {}: {e}", dir.display()))?;
    }
    if let Some((uid, _)) = run_as {
        for ancestor in root.ancestors().skip(1) {
            let meta =
                std::fs::metadata(ancestor).map_err(|e| format!("cannot inspect {}: {e}", ancestor.display()))?;
            let mode = meta.permissions().mode();
            let reachable =
                mode & 0o001 != 0 || (std::os::unix::fs::MetadataExt::uid(&meta) == uid && mode & 0o100 != 0);
            if !reachable {
                return Err(format!(
                    "PostgreSQL runs as uid {uid}, which cannot enter {}; set BURNRATE_DATA_DIR to a directory \
                     it can reach (for example /var/lib/burnrate) or set DATABASE_URL",
                    ancestor.display()
                ));
            }
        }
    }
    Ok(())
}
