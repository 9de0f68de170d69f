//! `crest import curl`: a curl command line (or a file of them, as a browser's "copy all as
//! cURL" gives) as a scenario, one request step per command (per URL, when a command names
//! several).
//!
//! The request is what curl would send: its method, path and query, headers and body bytes.
//! Where crest writes a body itself (`form:`, `json:`) the import uses that only when crest's
//! bytes are curl's (a form that encodes back the same) or the difference is only JSON
//! whitespace; otherwise the body stays text with its header.

mod options;
mod shell;

use crate::scenario::{Body, Defaults, Flow, Imported, Part, Request, Step};
use crate::secrets::Secrets;
use crate::ImportError;
use indexmap::IndexMap;
use options::{Data, FormArg, Options};

/// Redirects `-L` follows when `--max-redirs` does not say: enough for a login's chain, few
/// enough that a loop fails fast.
const DEFAULT_REDIRECTS: u32 = 10;
/// crest follows at most this many redirects.
const MAX_REDIRECTS: u32 = 50;
/// A word of a command longer than this is shortened in the scenario's comment.
const SHOWN_WORD: usize = 160;

/// The scenario of the curl commands in `text`; `source_name` names the input in errors and in
/// the scenario's comment.
pub fn import(text: &str, source_name: &str) -> Result<Imported, ImportError> {
    let not_curl = |message: String| ImportError::NotThisKind {
        source_name: source_name.to_string(),
        message,
    };
    let commands = shell::commands(text.strip_prefix('\u{feff}').unwrap_or(text)).map_err(not_curl)?;
    if commands.is_empty() {
        return Err(not_curl("no curl command in it".into()));
    }
    let mut parsed = Vec::new();
    for c in &commands {
        let program = &c.words[0];
        let base = program.rsplit(['/', '\\']).next().unwrap_or(program);
        if !matches!(base, "curl" | "curl.exe") {
            return Err(not_curl(format!(
                "line {}: `{}` is not a curl command (give commands that start with `curl`)",
                c.line,
                shell::quote(program)
            )));
        }
        let opts = options::parse(&c.words[1..]).map_err(|e| in_command(e, c.line, commands.len()))?;
        if opts.urls.is_empty() {
            return Err(ImportError::Other(format!(
                "{source_name}: line {}: the curl command has no URL",
                c.line
            )));
        }
        parsed.push(opts);
    }
    let mut b = Builder::default();
    for (n, (c, opts)) in commands.iter().zip(&parsed).enumerate() {
        let prefix = if commands.len() > 1 {
            format!("command {} (line {}): ", n + 1, c.line)
        } else {
            String::new()
        };
        b.command(opts, &prefix)
            .map_err(|e| in_command(e, c.line, commands.len()))?;
        for v in &c.variables {
            b.notes.push(format!(
                "{prefix}${v} is a shell variable: it is sent as the text `${v}`; write ${{env:{v}}} in the scenario to read it from the environment"
            ));
        }
    }
    b.defaults(&parsed);
    let mut imported = Imported {
        made_from: Vec::new(),
        origin: b.origin.clone().unwrap_or_default(),
        defaults: b.defaults,
        flows: vec![Flow {
            name: "main".into(),
            steps: b.steps,
        }],
        secrets: Secrets::default(),
        correlated: Vec::new(),
        notes: b.notes,
    };
    // The secrets' values are known only now; the comment must not show any of them.
    let mut hidden: Vec<String> = b.secrets.iter().map(|s| s.value.clone()).collect();
    hidden.extend(b.also_hidden);
    hidden.retain(|h| !h.is_empty());
    hidden.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    hidden.dedup();
    imported.made_from = commands.iter().map(|c| shown(&c.words, &hidden)).collect();
    imported.secrets = b.secrets;
    Ok(imported)
}

/// An option's error in a file of several commands says which command it is in.
fn in_command(e: ImportError, line: usize, commands: usize) -> ImportError {
    match e {
        ImportError::CurlOption { option, message } if commands > 1 => ImportError::CurlOption {
            option,
            message: format!("{message} (the command on line {line})"),
        },
        e => e,
    }
}

/// A command as the scenario's comment shows it: its words quoted for bash, every hidden value
/// replaced by `<redacted>`, long words (bodies) shortened.
fn shown(words: &[String], hidden: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            let mut w = w.clone();
            for h in hidden {
                w = redact(&w, h);
            }
            if w.chars().count() > SHOWN_WORD {
                let total = w.len();
                w = format!("{}...({total} bytes)", w.chars().take(SHOWN_WORD).collect::<String>());
            }
            shell::quote(&w)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `word` with `secret` replaced where it stands as a value: between the start or a
/// delimiter (`=`, `:`, `;`, a quote...) and the end or one, so that a short secret (`pin=1`)
/// does not blank every `1` of the command. A secret of 4 characters or more is replaced
/// wherever it is, even inside other text: the comment never shows it.
fn redact(word: &str, secret: &str) -> String {
    const BEFORE: &[u8] = b"=:;&,/@ \t\"'({[";
    const AFTER: &[u8] = b";&, \t\"')}]@";
    let bytes = word.as_bytes();
    let mut out = String::with_capacity(word.len());
    let mut at = 0;
    let mut from = 0;
    while let Some(i) = word[from..].find(secret).map(|i| i + from) {
        let end = i + secret.len();
        let bounded = (i == 0 || BEFORE.contains(&bytes[i - 1])) && (end == bytes.len() || AFTER.contains(&bytes[end]));
        if bounded || secret.len() >= 4 {
            out.push_str(&word[at..i]);
            out.push_str(crest_model::redact::REDACTED);
            at = end;
            from = end;
        } else {
            from = i + word[i..].chars().next().map_or(1, char::len_utf8);
        }
    }
    out.push_str(&word[at..]);
    out
}

#[derive(Default)]
struct Builder {
    origin: Option<String>,
    defaults: Defaults,
    steps: Vec<Step>,
    secrets: Secrets,
    /// Secret text as the command gave it when it differs from the value hidden (`user:pass`
    /// of `-u`, an encoded form value), to be redacted from the comment too.
    also_hidden: Vec<String>,
    notes: Vec<String>,
}

/// A URL split as the request needs it.
struct Target {
    origin: String,
    /// The path and query, as given (spaces and other bytes a request line cannot carry
    /// encoded).
    path: String,
    /// `user:password` written into the URL.
    userinfo: Option<String>,
}

fn split_url(raw: &str) -> Result<Target, ImportError> {
    let bad = |message: String| ImportError::CurlOption {
        option: "URL".into(),
        message,
    };
    let with_scheme = if raw.contains("://") {
        raw.to_string()
    } else {
        // As curl does with a bare host.
        format!("http://{raw}")
    };
    let (scheme, rest) = with_scheme
        .split_once("://")
        .ok_or_else(|| bad(format!("{raw:?} is not a URL")))?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return Err(bad(format!("{raw:?}: crest speaks HTTP and HTTPS only")));
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, mut path) = (&rest[..end], rest[end..].to_string());
    if let Some(hash) = path.find('#') {
        path.truncate(hash);
    }
    let (userinfo, host) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u.to_string()), h),
        None => (None, authority),
    };
    let url = url::Url::parse(&format!("{scheme}://{host}/")).map_err(|e| bad(format!("{raw:?}: {e}")))?;
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad(format!("{raw:?} has no host")));
    }
    let origin = url.origin().ascii_serialization();
    if !path.starts_with('/') {
        path.insert(0, '/');
    }
    let mut encoded = String::with_capacity(path.len());
    for c in path.chars() {
        if c.is_ascii_graphic() {
            encoded.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                encoded.push_str(&format!("%{b:02X}"));
            }
        }
    }
    Ok(Target {
        origin,
        path: encoded,
        userinfo,
    })
}

/// A `Name: value` header as curl reads `-H`: `Name:` alone removes a header curl would add
/// (none crest adds either), `Name;` sends it empty.
fn header(h: &str) -> Option<(String, String)> {
    match (h.find(':'), h.find(';')) {
        (Some(c), s) if s.is_none_or(|s| c < s) => {
            let (name, value) = (h[..c].trim(), h[c + 1..].trim());
            (!value.is_empty()).then(|| (name.to_string(), value.to_string()))
        }
        (_, Some(s)) if h[s + 1..].trim().is_empty() => Some((h[..s].trim().to_string(), String::new())),
        _ => None,
    }
}

fn is_json_type(t: &str) -> bool {
    let essence = t.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    essence == "application/json" || essence.ends_with("+json")
}

fn is_form_type(t: &str) -> bool {
    t.split(';')
        .next()
        .unwrap_or("")
        .trim()
        .eq_ignore_ascii_case("application/x-www-form-urlencoded")
}

/// curl's media type for a file part, by its extension (its own short table); others are
/// `application/octet-stream`.
fn file_type(path: &str) -> &'static str {
    let ext = path
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "gif" => "image/gif",
        "jpg" | "jpeg" => "image/jpeg",
        "png" => "image/png",
        "svg" => "image/svg+xml",
        "txt" => "text/plain",
        "htm" | "html" => "text/html",
        "pdf" => "application/pdf",
        "xml" => "application/xml",
        _ => "application/octet-stream",
    }
}

impl Builder {
    fn command(&mut self, o: &Options, prefix: &str) -> Result<(), ImportError> {
        if !o.form.is_empty() && !o.data.is_empty() {
            return Err(ImportError::CurlOption {
                option: "-F".into(),
                message: "curl sends one body: -F cannot be combined with -d, --data-* or --json".into(),
            });
        }
        if o.get && !o.form.is_empty() {
            return Err(ImportError::CurlOption {
                option: "-G".into(),
                message: "-G puts -d data into the query; it cannot carry -F parts".into(),
            });
        }
        for note in &o.notes {
            self.notes.push(format!("{prefix}{note}"));
        }
        for raw in &o.urls {
            self.request(o, raw, prefix)?;
        }
        Ok(())
    }

    /// Settings curl gives per command are the scenario's for every request: the strongest
    /// asked for, with a note when commands disagree.
    fn defaults(&mut self, all: &[Options]) {
        let d = &mut self.defaults;
        d.compression = all.iter().any(|o| o.compressed);
        d.insecure = all.iter().any(|o| o.insecure);
        d.redirects = all
            .iter()
            .filter(|o| o.location)
            .map(|o| match o.max_redirs {
                None => DEFAULT_REDIRECTS,
                Some(n) if n < 0 => MAX_REDIRECTS,
                Some(n) => (n as u64).min(MAX_REDIRECTS as u64) as u32,
            })
            .max();
        d.http = all.iter().find_map(|o| o.http).map(str::to_string);
        let mixed = |f: fn(&Options) -> bool| all.iter().any(f) && !all.iter().all(f);
        for (flag, on) in [
            ("--compressed", mixed(|o| o.compressed)),
            ("-k", mixed(|o| o.insecure)),
            ("-L", mixed(|o| o.location)),
            ("--http2", mixed(|o| o.http.is_some())),
        ] {
            if on {
                self.notes.push(format!(
                    "{flag} is given to some commands only: the scenario's defaults apply it to every request"
                ));
            }
        }
        if all
            .iter()
            .any(|o| o.location && o.max_redirs.is_some_and(|n| n < 0 || n > MAX_REDIRECTS as i64))
        {
            self.notes
                .push(format!("--max-redirs: crest follows at most {MAX_REDIRECTS} redirects"));
        }
    }

    fn request(&mut self, o: &Options, raw_url: &str, prefix: &str) -> Result<(), ImportError> {
        let step = self.steps.len() + 1;
        let target = split_url(raw_url)?;
        let origin = self.origin.get_or_insert_with(|| target.origin.clone()).clone();
        let has_body = !o.data.is_empty() || !o.form.is_empty();
        let method = match (&o.method, o.head, o.get) {
            (Some(m), _, _) => m.clone(),
            (None, true, _) => "HEAD".into(),
            (None, false, true) => "GET".into(),
            (None, false, false) if has_body => "POST".into(),
            _ => "GET".into(),
        };
        let path = with_query(o, &target.path)?;
        let shown_path = path.split('?').next().unwrap_or("/").to_string();
        let from = |what: &str| format!("{what} of {method} {shown_path} (step {step})");
        let path = self.query(&path, &from);

        let mut headers = self.own_headers(o, &target, &from)?;
        let mut cookies: Vec<String> = Vec::new();
        let mut content_type: Option<String> = None;
        let mut host_note = false;
        for h in &o.headers {
            let Some((name, value)) = header(h) else {
                if !h.trim_end().ends_with(':') {
                    self.notes.push(format!(
                        "{prefix}-H {h:?}: not a `Name: value` header, left out as curl does"
                    ));
                }
                continue;
            };
            if name.eq_ignore_ascii_case("cookie") {
                cookies.push(value);
                continue;
            }
            if name.eq_ignore_ascii_case("content-length") {
                // crest counts the body it sends.
                continue;
            }
            if name.eq_ignore_ascii_case("host") {
                host_note = true;
                continue;
            }
            if name.eq_ignore_ascii_case("content-type") {
                if !o.form.is_empty() && value.to_ascii_lowercase().starts_with("multipart/") {
                    // curl adds the boundary of the body it writes; crest does the same.
                    continue;
                }
                content_type = Some(value.clone());
            }
            let kept = self
                .secrets
                .keep_or_hide(&name, &value, &from(&format!("header {name}")));
            // A header given twice is sent twice by curl; one header with both values means the
            // same.
            match headers.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case(&name)) {
                Some((_, v)) => *v = format!("{v}, {kept}"),
                None => {
                    headers.insert(name, kept);
                }
            }
        }
        if host_note {
            self.notes.push(format!(
                "{prefix}-H Host: left out; crest sends the target's host (CREST_TARGET)"
            ));
        }
        cookies.extend(o.cookies.iter().cloned());
        if let Some(c) = self.cookies(&cookies, &from)? {
            headers.insert("Cookie".into(), c);
        }
        let body = self.body(o, &mut headers, content_type.as_deref(), prefix, &from)?;

        let mut r = Request {
            method,
            headers,
            body,
            ..Request::default()
        };
        if target.origin == origin {
            r.path = Some(path);
        } else {
            r.url = Some(format!("{}{path}", target.origin));
        }
        self.steps.push(Step::Request(Box::new(r)));
        Ok(())
    }

    /// The headers curl adds itself (credentials, `-A`, `-e`, `-r`, its `Accept`), unless a
    /// `-H` gives (or removes) the same.
    fn own_headers(
        &mut self,
        o: &Options,
        target: &Target,
        from: &dyn Fn(&str) -> String,
    ) -> Result<IndexMap<String, String>, ImportError> {
        let mut headers: IndexMap<String, String> = IndexMap::new();
        let given = |name: &str| {
            o.headers
                .iter()
                .filter_map(|h| header(h))
                .any(|(n, _)| n.eq_ignore_ascii_case(name))
        };
        // What curl adds itself, unless a -H gives the same header.
        if !given("Authorization") {
            // Credentials in the URL are percent-encoded there (`pw%40x` is `pw@x`); -u's are not.
            let userinfo = o.user.clone().or_else(|| {
                target
                    .userinfo
                    .as_ref()
                    .map(|u| percent_encoding::percent_decode_str(u).decode_utf8_lossy().into_owned())
            });
            if let Some(u) = userinfo {
                let Some((_, password)) = u.split_once(':') else {
                    return Err(ImportError::CurlOption {
                        option: "-u".into(),
                        message: "without a password curl asks for one; give user:password".into(),
                    });
                };
                use base64::Engine as _;
                let basic = format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(u.as_bytes())
                );
                let value = self
                    .secrets
                    .hide("Authorization", &basic, &from("-u user:password (Basic authorization)"));
                headers.insert("Authorization".into(), value);
                self.also_hidden.push(u.clone());
                if !password.is_empty() {
                    self.also_hidden.push(password.to_string());
                }
            } else if let Some(token) = &o.bearer {
                let value = self.secrets.hide(
                    "Authorization",
                    &format!("Bearer {token}"),
                    &from("header Authorization"),
                );
                headers.insert("Authorization".into(), value);
                self.also_hidden.push(token.clone());
            }
        }
        if let Some(ua) = o.user_agent.as_ref().filter(|_| !given("User-Agent")) {
            headers.insert("User-Agent".into(), crate::literal(ua));
        }
        if let Some(r) = o.referer.as_ref().filter(|_| !given("Referer")) {
            headers.insert("Referer".into(), crate::literal(r));
        }
        if let Some(r) = o.range.as_ref().filter(|_| !given("Range")) {
            headers.insert("Range".into(), crate::literal(&format!("bytes={r}")));
        }
        // `-H 'Accept:'` removes curl's own.
        let removed = |name: &str| {
            o.headers.iter().any(|h| {
                h.split_once(':')
                    .is_some_and(|(n, v)| n.trim().eq_ignore_ascii_case(name) && v.trim().is_empty())
            })
        };
        if !given("Accept") && !removed("Accept") {
            // curl's own, which some services negotiate on; crest sends none of its own.
            let accept = if o.json { "application/json" } else { "*/*" };
            headers.insert("Accept".into(), accept.into());
        }
        Ok(headers)
    }

    /// The path and query as a template: every `name=value` of the query whose name looks
    /// secret is read from the environment, its value as it was written (still encoded).
    fn query(&mut self, path: &str, from: &dyn Fn(&str) -> String) -> String {
        let Some((p, q)) = path.split_once('?') else {
            return crate::literal(path);
        };
        format!("{}?{}", crate::literal(p), self.hide_pairs(q, "query parameter", from))
    }

    /// `name=value&...` as a template, each value whose name looks secret read from the
    /// environment as it was written (still encoded); `what` says what the pairs are.
    fn hide_pairs(&mut self, text: &str, what: &str, from: &dyn Fn(&str) -> String) -> String {
        let pairs: Vec<String> = text
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, v)) => {
                    let name = decode(k);
                    let kept = self.secrets.keep_or_hide(&name, v, &from(&format!("{what} {name}")));
                    format!("{}={kept}", crate::literal(k))
                }
                None => crate::literal(pair),
            })
            .collect();
        pairs.join("&")
    }

    /// One `Cookie` header of the cookies given (`-b` and `Cookie:` headers), each secret-looking
    /// value read from the environment. crest's cookie jar cannot be filled beforehand, so they
    /// are sent as the header curl would send.
    fn cookies(&mut self, given: &[String], from: &dyn Fn(&str) -> String) -> Result<Option<String>, ImportError> {
        let mut out = Vec::new();
        for c in given {
            if c.trim().is_empty() {
                continue;
            }
            if !c.contains('=') {
                return Err(ImportError::CurlOption {
                    option: "-b".into(),
                    message: format!(
                        "{c:?} names a cookie file, which the import does not read; give the cookies as 'name=value; name2=value2'"
                    ),
                });
            }
            for pair in c.split(';').map(str::trim).filter(|p| !p.is_empty()) {
                match pair.split_once('=') {
                    Some((k, v)) => {
                        let kept =
                            self.secrets
                                .keep_or_hide(k.trim(), v.trim(), &from(&format!("cookie {}", k.trim())));
                        out.push(format!("{}={kept}", crate::literal(k.trim())));
                    }
                    None => out.push(crate::literal(pair)),
                }
            }
        }
        Ok((!out.is_empty()).then(|| out.join("; ")))
    }

    fn body(
        &mut self,
        o: &Options,
        headers: &mut IndexMap<String, String>,
        content_type: Option<&str>,
        prefix: &str,
        from: &dyn Fn(&str) -> String,
    ) -> Result<Option<Body>, ImportError> {
        if !o.form.is_empty() {
            return self.multipart(&o.form, prefix, from).map(Some);
        }
        if o.get || o.data.is_empty() {
            return Ok(None);
        }
        let default_type = if o.json {
            "application/json"
        } else {
            "application/x-www-form-urlencoded"
        };
        let set_type = |headers: &mut IndexMap<String, String>| {
            if content_type.is_none() {
                headers.insert("Content-Type".into(), default_type.into());
            }
        };
        let files: Vec<&Data> = o.data.iter().filter(|d| matches!(d, Data::File { .. })).collect();
        if let Some(Data::File { path, option }) = files.first() {
            if o.data.len() > 1 {
                return Err(ImportError::CurlOption {
                    option: option.clone(),
                    message: "a file joined with other data is one body crest cannot send; give the body as one file"
                        .into(),
                });
            }
            set_type(headers);
            return Ok(Some(Body::File(path.clone())));
        }
        let texts: Vec<&str> = o
            .data
            .iter()
            .filter_map(|d| match d {
                Data::Text(t) => Some(t.as_str()),
                Data::File { .. } => None,
            })
            .collect();
        // --json pieces are joined as they are, -d pieces with `&`.
        let text = texts.join(if o.json { "" } else { "&" });
        let effective = content_type.unwrap_or(default_type);
        if is_json_type(effective) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
                return Ok(Some(Body::Json(self.json(None, v, from))));
            }
            set_type(headers);
            return Ok(Some(Body::Text(crate::literal(&text))));
        }
        if is_form_type(effective) {
            if let Some(fields) = form_fields(&text) {
                let mut form = IndexMap::new();
                for (k, v) in fields {
                    let kept = self.secrets.keep_or_hide(&k, &v, &from(&format!("form field {k}")));
                    form.insert(k, kept);
                }
                self.hide_raw_pairs(&text);
                return Ok(Some(Body::Form(form)));
            }
            set_type(headers);
            // Not a form crest would write the same: the text, its secret fields still hidden.
            return Ok(Some(Body::Text(self.hide_pairs(&text, "form field", from))));
        }
        set_type(headers);
        Ok(Some(Body::Text(crate::literal(&text))))
    }

    /// The encoded text of each secret form field, to be redacted from the comment as well.
    fn hide_raw_pairs(&mut self, text: &str) {
        for pair in text.split('&') {
            if let Some((k, v)) = pair.split_once('=') {
                if crest_model::redact::is_secret_name(&decode(k)) {
                    self.also_hidden.push(v.to_string());
                }
            }
        }
    }

    /// A JSON value with its strings as templates, and string fields whose names look secret
    /// read from the environment. Other values under such names (numbers, flags) keep their
    /// type: they are rarely secrets (`token_count`), and a string in their place would change
    /// what is sent.
    fn json(&mut self, key: Option<&str>, v: serde_json::Value, from: &dyn Fn(&str) -> String) -> serde_json::Value {
        use serde_json::Value;
        match v {
            Value::String(s) => Value::String(match key {
                Some(k) => {
                    let kept = self.secrets.keep_or_hide(k, &s, &from(&format!("JSON field {k}")));
                    if kept != crate::literal(&s) {
                        // As it may be written in the command: escaped for JSON.
                        if let Ok(escaped) = serde_json::to_string(&s) {
                            self.also_hidden.push(escaped.trim_matches('"').to_string());
                        }
                    }
                    kept
                }
                None => crate::literal(&s),
            }),
            Value::Array(items) => Value::Array(items.into_iter().map(|i| self.json(None, i, from)).collect()),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| {
                        let v = self.json(Some(&k), v, from);
                        (k, v)
                    })
                    .collect(),
            ),
            other => other,
        }
    }

    fn multipart(
        &mut self,
        form: &[FormArg],
        prefix: &str,
        from: &dyn Fn(&str) -> String,
    ) -> Result<Body, ImportError> {
        let mut parts = Vec::new();
        for f in form {
            let option = if f.literal { "--form-string" } else { "-F" };
            let refuse = |message: String| ImportError::CurlOption {
                option: option.to_string(),
                message,
            };
            let Some((name, content)) = f.text.split_once('=') else {
                return Err(refuse(format!("{:?} is not name=content", f.text)));
            };
            if f.literal {
                let value = self
                    .secrets
                    .keep_or_hide(name, content, &from(&format!("multipart part {name}")));
                parts.push(Part {
                    name: name.to_string(),
                    value: Some(value),
                    ..Part::default()
                });
                continue;
            }
            let (file, rest) = match content.strip_prefix('@') {
                Some(rest) => (true, rest),
                None if content.starts_with('<') => {
                    return Err(refuse(format!(
                        "{name}=<FILE sends a file's content as a value, which the import does not read; give name=@FILE to send it as a file"
                    )))
                }
                None => (false, content),
            };
            let (main, params) = form_params(rest);
            let mut part = Part {
                name: name.to_string(),
                ..Part::default()
            };
            let mut content_type = None;
            for (k, v) in params {
                match k.as_str() {
                    "type" => content_type = Some(v),
                    "filename" => self.notes.push(format!(
                        "{prefix}-F {name}: filename={v} left out; crest sends the file's own name"
                    )),
                    other => return Err(refuse(format!("{name}: ;{other}= is not something crest can send"))),
                }
            }
            if file {
                if main == "-" {
                    return Err(refuse(format!(
                        "{name}=@- reads stdin; save it to a file and give @FILE"
                    )));
                }
                part.content_type = Some(content_type.unwrap_or_else(|| file_type(&main).to_string()));
                part.file = Some(main);
            } else {
                if let Some(t) = content_type {
                    self.notes.push(format!(
                        "{prefix}-F {name}: ;type={t} left out; crest sends value parts without a type"
                    ));
                }
                part.value = Some(
                    self.secrets
                        .keep_or_hide(name, &main, &from(&format!("multipart part {name}"))),
                );
            }
            parts.push(part);
        }
        Ok(Body::Multipart(parts))
    }
}

/// `-F`'s content and its `;type=`, `;filename=`... parameters. A `"..."` content keeps its `;`;
/// otherwise only a `;` before a parameter name curl knows starts one.
fn form_params(s: &str) -> (String, Vec<(String, String)>) {
    const PARAMS: [&str; 4] = ["type=", "filename=", "headers=", "encoder="];
    let (main, mut rest) = if let Some(quoted) = s.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = quoted.char_indices();
        let mut end = quoted.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, n)) = chars.next() {
                        out.push(n);
                    }
                }
                '"' => {
                    end = i + 1;
                    break;
                }
                c => out.push(c),
            }
        }
        (out, &quoted[end..])
    } else {
        let cut = s
            .match_indices(';')
            .find(|(i, _)| PARAMS.iter().any(|p| s[i + 1..].trim_start().starts_with(p)))
            .map_or(s.len(), |(i, _)| i);
        (s[..cut].to_string(), &s[cut..])
    };
    let mut params = Vec::new();
    while let Some(r) = rest.strip_prefix(';') {
        let r = r.trim_start();
        let next = r
            .match_indices(';')
            .find(|(i, _)| PARAMS.iter().any(|p| r[i + 1..].trim_start().starts_with(p)))
            .map_or(r.len(), |(i, _)| i);
        let (kv, tail) = r.split_at(next);
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        params.push((k.trim().to_string(), v.trim().trim_matches('"').to_string()));
        rest = tail;
    }
    (main, params)
}

/// The percent-decoded text of a form or query name.
fn decode(s: &str) -> String {
    url::form_urlencoded::parse(format!("{s}=").as_bytes())
        .next()
        .map_or_else(|| s.to_string(), |(k, _)| k.into_owned())
}

/// The fields of an `application/x-www-form-urlencoded` text, when crest's `form:` would send
/// it byte for byte the same (each `name=value` encoded as crest encodes, no name twice);
/// otherwise `None` and the text is sent as it is.
fn form_fields(text: &str) -> Option<IndexMap<String, String>> {
    if text.is_empty() {
        return None;
    }
    let mut fields = IndexMap::new();
    for pair in text.split('&') {
        let (k, _) = pair.split_once('=')?;
        if k.is_empty() {
            return None;
        }
        let (k, v) = url::form_urlencoded::parse(pair.as_bytes()).next()?;
        if fields.insert(k.into_owned(), v.into_owned()).is_some() {
            return None;
        }
    }
    let mut again = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in &fields {
        again.append_pair(k, v);
    }
    (again.finish() == text).then_some(fields)
}

/// The URL's path and query with what `-G` and `--url-query` add to the query, which curl joins
/// with `&`.
fn with_query(o: &Options, path: &str) -> Result<String, ImportError> {
    let mut path = path.to_string();
    // -G and --url-query add to the query, which curl joins with `&`.
    let mut extra_query: Vec<String> = o.url_query.clone();
    if o.get {
        let mut text = Vec::new();
        for d in &o.data {
            match d {
                Data::Text(t) => text.push(t.clone()),
                Data::File { option, .. } => {
                    return Err(ImportError::CurlOption {
                        option: option.clone(),
                        message: "with -G the data goes into the query, and the import does not read files".into(),
                    })
                }
            }
        }
        if !text.is_empty() {
            // curl would refuse a URL with a space in it; crest's request would too, at run
            // time. A space in -G data is meant as one: sent encoded.
            extra_query.push(text.join("&").replace(' ', "%20"));
        }
    }
    if !extra_query.is_empty() {
        let extra = extra_query.join("&");
        match path.find('?') {
            Some(q) if q + 1 < path.len() => path = format!("{path}&{extra}"),
            Some(_) => path.push_str(&extra),
            None => path = format!("{path}?{extra}"),
        }
    }
    Ok(path)
}

#[cfg(test)]
mod tests;
