//! `crest worker`: joins a collector (`crest collect`), takes its plan, resolves it with this
//! machine's environment, starts at the instant the collector gives (on this machine's clock,
//! corrected by the offset measured against the collector's), and sends its journal's entries
//! as the run keeps them ([`crate::link::Link`], one of the run's [`crate::measure::Readers`]). See
//! [`crate::wire`] for what is said.

use crate::cli::{Cli, Command, WorkerArgs};
use crate::link::Link;
use crate::wire::{self, Down, PlanText, Up};
use anyhow::{bail, Context, Result};
use clap::Parser;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Component, Path, PathBuf};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// How long a worker tries to reach its collector, which may start after it (a Kubernetes Job's
/// pods and the collector's are scheduled independently).
const REACH_FOR: Duration = Duration::from_secs(120);

/// Round trips to measure the clock offset over; the one of shortest round trip is kept.
const PINGS: usize = 8;

/// The variable a Kubernetes Indexed Job sets to each pod's completion index.
const JOB_INDEX: &str = "JOB_COMPLETION_INDEX";

/// One connection to the collector, upgraded, read line by line.
struct Conn {
    read: BufReader<TcpStream>,
    write: TcpStream,
}

impl Conn {
    /// Joins the collector at `addr` with `token`, trying again while it can't be reached.
    fn join(addr: &str, token: &str) -> Result<Conn> {
        let until = Instant::now() + REACH_FOR;
        let stream = loop {
            match TcpStream::connect(addr) {
                Ok(s) => break s,
                Err(_) if Instant::now() < until => std::thread::sleep(Duration::from_millis(500)),
                Err(e) => return Err(e).with_context(|| format!("cannot reach the collector at {addr}")),
            }
        };
        stream.set_nodelay(true)?;
        let mut write = stream.try_clone()?;
        write!(
            write,
            "GET {} HTTP/1.1\r\nHost: {addr}\r\nConnection: Upgrade\r\nUpgrade: {}\r\nAuthorization: Bearer {token}\r\n\r\n",
            wire::JOIN_PATH,
            wire::PROTOCOL
        )?;
        let mut read = BufReader::new(stream);
        let mut status = String::new();
        read.read_line(&mut status)?;
        let code: u16 = status
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let mut length = 0usize;
        loop {
            let mut h = String::new();
            if read.read_line(&mut h)? == 0 || h.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = h.split_once(':') {
                if name.trim().eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        if code == 101 {
            return Ok(Conn { read, write });
        }
        let mut body = vec![0; length.min(64 << 10)];
        let _ = read.read_exact(&mut body);
        let why = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["error"].as_str().map(String::from))
            .unwrap_or_else(|| String::from_utf8_lossy(&body).into_owned());
        if code == 401 {
            bail!("the collector at {addr} refused this worker's token (401): {why}");
        }
        bail!(
            "the collector at {addr} refused to take this worker ({}): {why}",
            status.trim()
        );
    }

    fn send(&mut self, m: &Up) -> Result<()> {
        self.write
            .write_all(&wire::line(m))
            .context("the connection to the collector was cut")
    }

    fn recv(&mut self) -> Result<Down> {
        let mut l = String::new();
        if self.read.read_line(&mut l)? == 0 {
            bail!("the collector closed the connection");
        }
        serde_json::from_str(&l).context("the collector sent what this worker can't read (another crest version?)")
    }
}

/// The index this worker asks for: `--worker-index`, or a Kubernetes Indexed Job's.
fn asked_index(given: Option<u32>) -> Result<Option<u32>> {
    Ok(match given {
        Some(i) => Some(i),
        None => match std::env::var(JOB_INDEX) {
            Ok(v) => Some(
                v.trim()
                    .parse()
                    .map_err(|_| anyhow::anyhow!("{JOB_INDEX}={v:?}: give a worker index of 0 or more"))?,
            ),
            Err(_) => None,
        },
    })
}

/// Measures the collector's clock against this one's, in µs from `epoch`: returns the round
/// trip and the offset of the shortest of [`PINGS`] round trips, whose reading is the truest.
fn clock(conn: &mut Conn, epoch: Instant) -> Result<(u64, i64)> {
    let now_us = || epoch.elapsed().as_micros() as u64;
    let mut best: Option<(u64, i64)> = None;
    for _ in 0..PINGS {
        let t0 = now_us();
        conn.send(&Up::Ping { t_us: t0 })?;
        let Down::Pong { at_us, .. } = conn.recv()? else {
            bail!("the collector did not answer the clock's round trip");
        };
        let t3 = now_us();
        let rtt = t3 - t0;
        let offset = at_us as i64 - ((t0 + t3) / 2) as i64;
        if best.is_none_or(|(r, _)| rtt < r) {
            best = Some((rtt, offset));
        }
    }
    Ok(best.unwrap_or_default())
}

/// `crest worker`. Returns the exit code: 0 when its part was sent to the end.
pub fn command(a: &WorkerArgs) -> Result<u8> {
    let token = a
        .token
        .clone()
        .or_else(|| std::env::var("CREST_TOKEN").ok())
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .context("give the collector's token with --token, or set CREST_TOKEN")?;
    let index = asked_index(a.worker_index)?;
    let mut conn = Conn::join(&a.collector, &token)?;
    conn.send(&Up::Hello {
        crest_version: env!("CARGO_PKG_VERSION").into(),
        index,
    })?;
    let (index, count, plan) = match conn.recv()? {
        Down::Welcome { index, count, plan } => (index, count, plan),
        Down::Refused { reason } => bail!("the collector refused this worker: {reason}"),
        other => bail!("the collector said {other:?} before taking this worker"),
    };
    eprintln!("worker {index} of {count}: joined {}", a.collector);

    let epoch = Instant::now();
    let (rtt_us, offset_us) = clock(&mut conn, epoch)?;

    // Its part is kept unless asked not to, so a collector lost mid-run loses its last seconds,
    // not the run: every worker's part is `crest merge` input.
    let dir = match (&a.out, a.no_keep) {
        (Some(d), _) => d.clone(),
        (None, false) => crate::rundir::fresh_dir(&format!("worker-{index}-")),
        (None, true) => std::env::temp_dir().join(format!("crest-worker-{}", std::process::id())),
    };
    let files = std::env::temp_dir().join(format!("crest-worker-{}-plan", std::process::id()));
    // Gone however the worker ends, refused or failed included: the plan's files always, the
    // part too when it is not kept.
    let _files = Scratch(Some(files.clone()));
    let _part = Scratch(a.no_keep.then(|| dir.clone()));
    let resolved = resolve(&plan, index, count, &dir, &files);
    let (prepared, run, command_line) = match resolved {
        Ok(r) => r,
        Err(e) => {
            let _ = conn.send(&Up::Failed {
                message: format!("{e:#}"),
            });
            return Err(e.context(format!("worker {index}: cannot resolve the collector's plan")));
        }
    };
    let opening = crate::measure::opening(&prepared.plan, &command_line, None);
    conn.send(&Up::Ready {
        digest: wire::digest(&opening),
        offset_us,
        rtt_us,
    })?;
    let at_us = match conn.recv()? {
        Down::Start { at_us } => at_us,
        Down::Refused { reason } => bail!("the collector refused this worker: {reason}"),
        other => bail!("the collector said {other:?} instead of starting"),
    };
    let start_at = epoch + Duration::from_micros((at_us as i64 - offset_us).max(0) as u64);
    eprintln!(
        "worker {index} of {count}: starting in {:.0} ms, on the collector's clock read within {:.3} ms",
        start_at.saturating_duration_since(Instant::now()).as_secs_f64() * 1e3,
        rtt_us as f64 / 2e3
    );

    let (tx, lines) = mpsc::channel::<Vec<u8>>();
    let link = Arc::new(Link::new(start_at, tx));
    let Conn { mut read, write } = conn;
    let mut writer = write.try_clone()?;
    let sender = Arc::clone(&link);
    let sending = std::thread::Builder::new()
        .name("crest-worker-out".into())
        .spawn(move || {
            for l in lines {
                if writer.write_all(&l).is_err() {
                    sender.cut();
                    return;
                }
            }
            let _ = writer.shutdown(std::net::Shutdown::Write);
        })?;
    let listener = Arc::clone(&link);
    std::thread::Builder::new()
        .name("crest-worker-in".into())
        .spawn(move || {
            let link = listener;
            let mut l = String::new();
            loop {
                l.clear();
                match read.read_line(&mut l) {
                    Ok(0) | Err(_) => {
                        link.cut();
                        return;
                    }
                    Ok(_) => match serde_json::from_str(&l) {
                        Ok(Down::Stop) => link.stop_now(),
                        Ok(Down::Steer { changed }) => link.follow(&changed),
                        _ => {}
                    },
                }
            }
        })?;
    let readers = crate::measure::Readers {
        page: None,
        collector: Some(Arc::clone(&link)),
    };
    let ran = prepared.execute(&command_line, &run.output, &readers);
    // Everything kept is sent before the connection is closed.
    link.close();
    let _ = sending.join();
    let cut = link.collector_lost();
    drop(write);
    ran?;
    let kept = if a.no_keep {
        String::new()
    } else {
        eprintln!("worker {index}: its part is in {}", dir.display());
        format!("; its part as far as it went is in {}", dir.display())
    };
    if cut {
        bail!("worker {index}: the connection to the collector was cut while the run went on; this worker stopped (ended by collector_lost){kept}");
    }
    Ok(0)
}

/// A directory the worker made for its own use, removed when it goes out of scope.
struct Scratch(Option<PathBuf>);

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Some(d) = &self.0 {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// The collector's plan as this worker's part: its flags read as `crest collect` reads them,
/// with this worker's index and output, and its scenario (if any) resolved from the text handed
/// on, the files it reads written under `files`, and this machine's environment.
fn resolve(
    plan: &PlanText,
    index: u32,
    count: u32,
    out: &Path,
    files: &Path,
) -> Result<(crate::run::Prepared, crate::cli::RunArgs, Vec<String>)> {
    let mut argv = vec!["crest".to_string(), "collect".to_string()];
    argv.extend(plan.args.iter().cloned());
    let cli = Cli::try_parse_from(&argv).map_err(|e| anyhow::anyhow!("the collector's flags: {e}"))?;
    crest_model::redact::also_secret(&cli.redact);
    let Command::Collect(c) = cli.command else {
        bail!("internal: the collector's flags are not a collector's");
    };
    let mut run = c.run;
    run.workers = Some(count);
    run.worker_index = Some(index);
    run.collected = true;
    run.output.out = Some(out.to_path_buf());
    run.output.quiet = true;
    run.output.summary_json = None;
    // The collector writes the run's CI files and its row in the team store, once, for the
    // whole run.
    run.output.junit = None;
    run.output.markdown_summary = None;
    run.output.store = None;
    run.output.force = false;
    // The page is the collector's; `--load manual` is the worker's plan too.
    run.output.web = crate::cli::WebArgs {
        load: run.output.web.load.take(),
        ..Default::default()
    };
    let prepared = match &plan.scenario {
        Some(text) => {
            std::fs::create_dir_all(files)?;
            for f in &plan.files {
                let rel = Path::new(&f.name);
                if rel.is_absolute()
                    || rel
                        .components()
                        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
                {
                    bail!("{}: a scenario's file must be under its directory", f.name);
                }
                let path: PathBuf = files.join(rel);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                let bytes = f
                    .bytes()
                    .with_context(|| format!("{}: the collector sent it in base64 this worker can't read", f.name))?;
                std::fs::write(&path, bytes)?;
            }
            crate::run::prepare(&run, Some((text, files)))?
        }
        None => crate::run::prepare(&run, None)?,
    };
    Ok((prepared, run, argv))
}
