//! `crest import`: a scenario made from a curl command, a HAR recording or an OpenAPI spec,
//! checked by the same resolver `crest run` uses before it is written, so every import
//! validates, and its secrets written apart (a .env file, mode 0600).

use crate::cli::{ImportCommand, ImportOut};
use anyhow::{bail, Context, Result};
use crest_import::{write, Body, Imported, Step};
use crest_model::input::{read_text_file, MAX_DATA_FILE};
use std::io::Read;
use std::path::{Path, PathBuf};

pub fn command(c: &ImportCommand) -> Result<u8> {
    let (imported, out) = match c {
        ImportCommand::Curl(a) => {
            let (text, name) = match (&a.command, &a.file) {
                (_, Some(file)) => (read(file)?, file.display().to_string()),
                (Some(cmd), None) if cmd == "-" => {
                    let mut text = String::new();
                    std::io::stdin()
                        .take(MAX_DATA_FILE)
                        .read_to_string(&mut text)
                        .context("reading curl commands from stdin")?;
                    (text, "stdin".to_string())
                }
                (Some(cmd), None) => (cmd.clone(), "the command line".to_string()),
                (None, None) => bail!("give a curl command, or --file FILE"),
            };
            (crest_import::curl::import(&text, &name)?, &a.out)
        }
        ImportCommand::Har(a) => {
            let options = crest_import::har::HarOptions {
                keep_static: a.keep_static,
                max_think_ms: (!a.no_think).then_some(a.max_think.as_millis() as u64),
            };
            let text = read(&a.file)?;
            (
                crest_import::har::import(&text, &a.file.display().to_string(), &options)?,
                &a.out,
            )
        }
        ImportCommand::Openapi(a) => {
            let options = crest_import::openapi::OpenApiOptions {
                operations: a.operations.clone(),
                server: a.server.clone(),
            };
            let text = read(&a.file)?;
            (
                crest_import::openapi::import(&text, &a.file.display().to_string(), &options)?,
                &a.out,
            )
        }
    };
    emit(imported, out)
}

fn read(path: &Path) -> Result<String> {
    read_text_file(path, MAX_DATA_FILE).with_context(|| format!("cannot read {}", path.display()))
}

/// Writes (or prints) the scenario once the resolver has accepted it, with the secrets it read
/// supplied from the import itself.
fn emit(mut imported: Imported, out: &ImportOut) -> Result<u8> {
    let cwd = std::env::current_dir().context("the current directory")?;
    let (scenario_path, env_path) = match &out.out {
        Some(p) => (p.clone(), p.with_extension("env")),
        None => (PathBuf::from("scenario.yaml"), PathBuf::from("scenario.env")),
    };
    if let Some(p) = &out.out {
        check_out(p, &env_path, out.force)?;
    }
    let dir = match scenario_path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    missing_files(&imported)?;
    rebase_files(&mut imported, &cwd, &dir);
    let file_name = |p: &Path| {
        p.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    };
    let env_name = out.out.as_ref().map(|_| file_name(&env_path));
    let files = write::files(&imported, &file_name(&scenario_path), env_name.as_deref())?;
    let secrets: Vec<(String, String)> = imported
        .secrets
        .iter()
        .map(|s| (s.name.clone(), s.value.clone()))
        .collect();
    let env = |name: &str| {
        secrets
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(name).ok())
    };
    let shown = scenario_path.display().to_string();
    if let Err(e) = crest_scenario::load_str(&shown, &files.scenario, &dir, &env) {
        // The recorded hosts need not resolve where the import runs (an internal service, a
        // machine without DNS): `crest run` looks them up where the load is sent from.
        let (unresolved, other): (Vec<_>, Vec<_>) = e.problems.iter().partition(|p| unresolvable(&p.message));
        if !other.is_empty() {
            // An import that crest cannot run is crest's fault, not the input's: say so, and what.
            bail!("the scenario made from this input does not validate; please report it:\n{e}");
        }
        for p in unresolved {
            eprintln!(
                "note: not resolved from this machine ({}); `crest run` looks it up where it runs",
                p.message
            );
        }
    }
    let requests = requests(&imported);
    match &out.out {
        None => {
            print!("{}", files.scenario);
            if !imported.secrets.is_empty() {
                eprintln!(
                    "The scenario reads {} value{} from the environment (listed in its comments); give --out FILE to have them written to a .env file beside it.",
                    imported.secrets.iter().count(),
                    if imported.secrets.iter().count() == 1 { "" } else { "s" }
                );
            }
        }
        Some(path) => {
            std::fs::write(path, &files.scenario).with_context(|| format!("writing {}", path.display()))?;
            if let Some(env) = &files.env {
                write_private(&env_path, env)?;
            }
            eprintln!(
                "{}",
                summary(
                    &imported,
                    requests,
                    path,
                    files.env.as_ref().map(|_| env_path.as_path())
                )
            );
        }
    }
    Ok(0)
}

/// A problem that only says a host could not be looked up from this machine.
fn unresolvable(message: &str) -> bool {
    message.contains("cannot resolve host") || message.contains("resolved to no address")
}

fn requests(imported: &Imported) -> usize {
    imported
        .flows
        .iter()
        .flat_map(|f| &f.steps)
        .filter(|s| matches!(s, Step::Request(_)))
        .count()
}

/// What the import made, for the terminal: the files, the values it carries, the secrets it took
/// out, and how to run it.
fn summary(imported: &Imported, requests: usize, scenario: &Path, env: Option<&Path>) -> String {
    let mut out = format!(
        "wrote {} ({requests} request{})",
        scenario.display(),
        if requests == 1 { "" } else { "s" }
    );
    if let Some(env) = env {
        out.push_str(&format!(" and {} (its secrets, mode 0600)", env.display()));
    }
    for c in &imported.correlated {
        out.push_str(&format!("\n  carries ${{{}}} from {}", c.variable, c.from));
        if !c.to.is_empty() {
            out.push_str(&format!(" to {}", c.to.join(", ")));
        }
    }
    for s in imported.secrets.iter() {
        out.push_str(&format!("\n  reads ${{env:{}}}: {}", s.name, s.from));
    }
    for n in &imported.notes {
        out.push_str(&format!("\n  {n}"));
    }
    let env = env.map_or_else(String::new, |e| format!(" --env-file {}", e.display()));
    out.push_str(&format!("\nrun it: crest run {}{env} -c 10 -d 1m", scenario.display()));
    out
}

/// The scenario and its .env file are new files unless `--force`: an import never replaces a
/// scenario, or a .env file of secrets, that someone may have edited, and `--out x.env` would
/// have the secrets written over the scenario.
fn check_out(scenario: &Path, env: &Path, force: bool) -> Result<()> {
    if scenario.extension().is_some_and(|e| e == "env") {
        bail!(
            "--out {}: the secrets go to a .env file beside the scenario; name the scenario itself (e.g. {})",
            scenario.display(),
            scenario.with_extension("yaml").display()
        );
    }
    if !force {
        for p in [scenario, env] {
            if p.exists() {
                bail!("--out: {} exists; give --force to replace it", p.display());
            }
        }
    }
    Ok(())
}

/// Files a request sends (`--data-binary @file`) are named relative to where the import ran;
/// the scenario names them relative to itself (so the two can move together), or absolutely
/// when they are not beneath it.
/// The files the input sends as bodies, each where the import runs: one that is not there is
/// the input's mistake (`--data-binary @FILE` of a file elsewhere), said with the request
/// that sends it, not as a scenario crest made and cannot validate.
fn missing_files(imported: &Imported) -> Result<()> {
    for flow in &imported.flows {
        for step in &flow.steps {
            let Step::Request(r) = step else { continue };
            let files: Vec<&String> = match &r.body {
                Some(Body::File(f)) => vec![f],
                Some(Body::Multipart(parts)) => parts.iter().filter_map(|p| p.file.as_ref()).collect(),
                _ => Vec::new(),
            };
            if let Some(f) = files.into_iter().find(|f| !Path::new(f.as_str()).is_file()) {
                bail!(
                    "{f}: no such file here; {} {} sends it as its body (@{f}), and the scenario reads it each run",
                    r.method,
                    r.url.as_deref().or(r.path.as_deref()).unwrap_or("/")
                );
            }
        }
    }
    Ok(())
}

fn rebase_files(imported: &mut Imported, cwd: &Path, dir: &Path) {
    let (Ok(cwd), Ok(dir)) = (std::fs::canonicalize(cwd), std::fs::canonicalize(dir)) else {
        return;
    };
    if cwd == dir {
        return;
    }
    let rebase = |f: &mut String| {
        let p = Path::new(f.as_str());
        if p.is_relative() {
            let whole = cwd.join(p);
            *f = match whole.strip_prefix(&dir) {
                Ok(under) => under.display().to_string(),
                Err(_) => whole.display().to_string(),
            };
        }
    };
    for flow in &mut imported.flows {
        for step in &mut flow.steps {
            let Step::Request(r) = step else { continue };
            match &mut r.body {
                Some(Body::File(f)) => rebase(f),
                Some(Body::Multipart(parts)) => parts.iter_mut().filter_map(|p| p.file.as_mut()).for_each(rebase),
                _ => {}
            }
        }
    }
}

/// Writes a file only its owner can read, replacing any before it whole.
fn write_private(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("env.tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("writing {}", tmp.display()))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_import_never_writes_over_a_file_unless_forced() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let yaml = dir.path().join("s.yaml");
        let env = dir.path().join("s.env");
        // The secrets would be written over the scenario.
        let err = check_out(&env, &env, true).unwrap_err().to_string();
        assert!(err.contains("name the scenario itself"), "{err}");
        assert!(check_out(&yaml, &env, false).is_ok());
        std::fs::write(&env, "A='b'\n").unwrap_or_else(|e| panic!("{e}"));
        let err = check_out(&yaml, &env, false).unwrap_err().to_string();
        assert!(err.contains("s.env exists; give --force"), "{err}");
        assert!(check_out(&yaml, &env, true).is_ok());
    }
}
