//! Templates: `${name}`, `${feeder.column}`, `${env:NAME}` and `${function(args)}` in strings.
//!
//! Templates are parsed once, when the scenario is validated, so an unknown function or a
//! malformed expression is reported with its location before any load is sent; at run time
//! rendering only looks values up. `$${` writes a literal `${`.

use base64::Engine as _;
use std::fmt;

/// A parsed template.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq)]
enum Part {
    Lit(String),
    /// A value resolved when the plan was built: an environment variable. Kept apart so that it
    /// is never shown.
    Secret(String),
    Var(String),
    Column {
        feeder: String,
        column: String,
    },
    Func(Func),
}

/// A built-in function.
#[derive(Clone, Debug, PartialEq)]
pub enum Func {
    /// A random UUID (v4).
    Uuid,
    /// Now, RFC 3339 in UTC with seconds.
    Now,
    /// Now, in seconds since the Unix epoch.
    NowEpoch,
    /// Now, in milliseconds since the Unix epoch.
    NowMs,
    /// The virtual user's number, from 0.
    User,
    /// The user's iteration number, from 0.
    Iteration,
    /// A counter shared by every user of the run, from 0.
    Seq,
    /// A random integer in an inclusive range.
    RandomInt(i64, i64),
    /// One of the arguments, at random.
    RandomChoice(Vec<String>),
    /// A random alphanumeric string of this length.
    RandomString(usize),
    /// Base64 of a variable's value or of a literal.
    Base64(Arg),
}

/// An argument that may name a variable.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// A quoted literal.
    Lit(String),
    /// A variable's value.
    Var(String),
}

/// A template could not be parsed. `offset` is the byte offset in the template text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TemplateError {
    /// Byte offset of the problem in the text.
    pub offset: usize,
    /// What is wrong, with a hint.
    pub message: String,
}

/// The longest `random_string(length)`: each rendering allocates it, for every request.
pub const MAX_RANDOM_STRING: usize = 1 << 20;
/// The longest value a variable may hold, and the most a template may expand to from what is
/// known before the run. `variables:` and every template are held to it when the scenario is
/// checked (see [`Template::bound`]), so `validate` refuses what `run` could not hold; a `set`
/// step is also held to it as it runs, since a variable set from itself in a loop doubles
/// each round.
pub const MAX_VALUE: usize = 4 << 20;

/// The longest text of a number a function renders: `u64::MAX` and `i64::MIN` are 20
/// characters, and so are RFC 3339 seconds in UTC (`2024-01-01T00:00:00Z`).
const NUMBER_TEXT: u64 = 20;

/// Names of the functions, for "did you mean" hints.
pub use crest_model::template::FUNCTIONS;

/// Where rendering looks values up.
pub trait Scope {
    /// A variable's value.
    fn var(&self, name: &str) -> Option<&str>;
    /// A feeder column's value in the current row.
    fn column(&self, feeder: &str, column: &str) -> Option<&str>;
    /// The user's number.
    fn user(&self) -> u64;
    /// The user's iteration number.
    fn iteration(&self) -> u64;
    /// The next value of the run's shared counter.
    fn next_seq(&self) -> u64;
    /// A random number source.
    fn rng(&self) -> &std::cell::RefCell<fastrand::Rng>;
}

impl Template {
    /// Parses `text`. `env` looks up environment variables for `${env:NAME}`.
    pub fn parse(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Template, TemplateError> {
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut rest = text;
        let mut offset = 0;
        while let Some(i) = rest.find('$') {
            lit.push_str(&rest[..i]);
            let after = &rest[i..];
            if let Some(stripped) = after.strip_prefix("$${") {
                lit.push_str("${");
                rest = stripped;
                offset += i + 3;
                continue;
            }
            if !after.starts_with("${") {
                lit.push('$');
                rest = &after[1..];
                offset += i + 1;
                continue;
            }
            let start = offset + i;
            let Some(end) = after.find('}') else {
                return Err(TemplateError {
                    offset: start,
                    message: "`${` is not closed by `}`".into(),
                });
            };
            let expr = after[2..end].trim();
            if !lit.is_empty() {
                parts.push(Part::Lit(std::mem::take(&mut lit)));
            }
            parts.push(parse_expr(expr, start, env)?);
            rest = &after[end + 1..];
            offset = start + end + 1;
        }
        lit.push_str(rest);
        if !lit.is_empty() {
            parts.push(Part::Lit(lit));
        }
        Ok(Template { parts })
    }

    /// A template that is just this text.
    pub fn literal(text: &str) -> Template {
        Template {
            parts: if text.is_empty() {
                vec![]
            } else {
                vec![Part::Lit(text.to_string())]
            },
        }
    }

    /// Variables the template reads (feeder columns as `feeder.column`).
    pub fn vars(&self) -> Vec<String> {
        let mut out = Vec::new();
        for p in &self.parts {
            match p {
                Part::Var(v) | Part::Func(Func::Base64(Arg::Var(v))) => out.push(v.clone()),
                Part::Column { feeder, column } => out.push(format!("{feeder}.{column}")),
                _ => {}
            }
        }
        out
    }

    /// The most bytes the template can render to: its literal text, plus for each part the
    /// most `var` says a variable holds, `column` says a data column holds, or the function can
    /// give. Saturates rather than wraps, so a doubling chain reads as huge, never as small.
    pub fn bound(&self, var: &dyn Fn(&str) -> u64, column: &dyn Fn(&str, &str) -> u64) -> u64 {
        let base64 = |n: u64| n.div_ceil(3).saturating_mul(4);
        self.parts.iter().fold(0u64, |sum, p| {
            let part = match p {
                Part::Lit(s) | Part::Secret(s) => s.len() as u64,
                Part::Var(v) => var(v),
                Part::Column { feeder, column: c } => column(feeder, c),
                Part::Func(f) => match f {
                    Func::Uuid => 36,
                    Func::Now | Func::NowEpoch | Func::NowMs | Func::User | Func::Iteration | Func::Seq => NUMBER_TEXT,
                    Func::RandomInt(..) => NUMBER_TEXT,
                    Func::RandomChoice(c) => c.iter().map(|c| c.len() as u64).max().unwrap_or(0),
                    Func::RandomString(n) => *n as u64,
                    Func::Base64(Arg::Lit(s)) => base64(s.len() as u64),
                    Func::Base64(Arg::Var(v)) => base64(var(v)),
                },
            };
            sum.saturating_add(part)
        })
    }

    /// True when rendering always gives the same text.
    pub fn is_constant(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Lit(_) | Part::Secret(_)))
    }

    /// The text, when the template is literal text only (no variables, functions or
    /// environment values).
    pub fn as_literal(&self) -> Option<String> {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Lit(s) => out.push_str(s),
                _ => return None,
            }
        }
        Some(out)
    }

    /// True when the template holds a secret (an environment value).
    pub fn has_secret(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Secret(_)))
    }

    /// Renders into `out`. Unknown variables render as empty; validation rules them out.
    pub fn render_into(&self, scope: &dyn Scope, out: &mut String) {
        for p in &self.parts {
            match p {
                Part::Lit(s) | Part::Secret(s) => out.push_str(s),
                Part::Var(v) => out.push_str(scope.var(v).unwrap_or("")),
                Part::Column { feeder, column } => out.push_str(scope.column(feeder, column).unwrap_or("")),
                Part::Func(f) => render_func(f, scope, out),
            }
        }
    }

    /// Renders to a new string.
    pub fn render(&self, scope: &dyn Scope) -> String {
        let mut out = String::new();
        self.render_into(scope, &mut out);
        out
    }

    /// Renders to a new string of at most `limit` bytes, or `None` once it would be longer:
    /// a variable set from itself (`${a}${a}`) in a loop doubles each round, and is stopped
    /// here before it takes the machine's memory. Each part is at most a variable's size, so
    /// the text never grows far past the limit before it is refused.
    pub fn render_at_most(&self, scope: &dyn Scope, limit: usize) -> Option<String> {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Lit(s) | Part::Secret(s) => out.push_str(s),
                Part::Var(v) => out.push_str(scope.var(v).unwrap_or("")),
                Part::Column { feeder, column } => out.push_str(scope.column(feeder, column).unwrap_or("")),
                Part::Func(f) => render_func(f, scope, &mut out),
            }
            if out.len() > limit {
                return None;
            }
        }
        Some(out)
    }
}

impl fmt::Display for Template {
    /// The template as text for names and messages; secrets are shown as `${env:…}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in &self.parts {
            match p {
                Part::Lit(s) => f.write_str(s)?,
                Part::Secret(_) => f.write_str("${env:…}")?,
                Part::Var(v) => write!(f, "{{{v}}}")?,
                Part::Column { feeder, column } => write!(f, "{{{feeder}.{column}}}")?,
                Part::Func(func) => write!(f, "{{{}}}", func_name(func))?,
            }
        }
        Ok(())
    }
}

fn func_name(f: &Func) -> &'static str {
    match f {
        Func::Uuid => "uuid",
        Func::Now => "now",
        Func::NowEpoch => "now_epoch",
        Func::NowMs => "now_ms",
        Func::User => "user",
        Func::Iteration => "iteration",
        Func::Seq => "seq",
        Func::RandomInt(..) => "random_int",
        Func::RandomChoice(_) => "random_choice",
        Func::RandomString(_) => "random_string",
        Func::Base64(_) => "base64",
    }
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn parse_expr(expr: &str, at: usize, env: &dyn Fn(&str) -> Option<String>) -> Result<Part, TemplateError> {
    let err = |message: String| TemplateError { offset: at, message };
    if expr.is_empty() {
        return Err(err("empty `${}`".into()));
    }
    if let Some(rest) = expr.strip_prefix("env:") {
        // `${env:NAME:-default}` falls back to the default when NAME is unset.
        let (name, default) = match rest.split_once(":-") {
            Some((n, d)) => (n.trim(), Some(d)),
            None => (rest.trim(), None),
        };
        return match (env(name), default) {
            (Some(v), _) => Ok(Part::Secret(v)),
            (None, Some(d)) => Ok(Part::Lit(d.to_string())),
            (None, None) => Err(err(format!("environment variable {name} is not set"))),
        };
    }
    if let Some(open) = expr.find('(') {
        let name = expr[..open].trim();
        let Some(args) = expr[open + 1..].strip_suffix(')') else {
            return Err(err(format!("`{expr}`: a function call ends with `)`")));
        };
        let args = split_args(args).map_err(|m| err(format!("`{expr}`: {m}")))?;
        return parse_func(name, &args)
            .map(Part::Func)
            .map_err(|m| err(format!("`{expr}`: {m}")));
    }
    if let Some((feeder, column)) = expr.split_once('.') {
        if is_ident(feeder) && is_ident(column) {
            return Ok(Part::Column {
                feeder: feeder.to_string(),
                column: column.to_string(),
            });
        }
    }
    if !is_ident(expr) {
        return Err(err(format!("`{expr}` is not a variable name or a function call")));
    }
    // Functions without arguments may be written bare: `${now}`, `${uuid}`.
    if let Ok(f) = parse_func(expr, &[]) {
        if FUNCTIONS.contains(&expr) {
            return Ok(Part::Func(f));
        }
    }
    Ok(Part::Var(expr.to_string()))
}

/// What is wrong with a function call in a template; [`TemplateError`] adds where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
enum CallError {
    #[error("a quoted argument is not closed")]
    UnclosedQuote,
    #[error("unexpected `{0}` between arguments")]
    Unexpected(char),
    #[error("{0}() takes no arguments")]
    NoArguments(String),
    #[error("{0}() needs whole numbers")]
    NotWhole(String),
    #[error("random_int(min, max) takes two whole numbers")]
    RandomIntArity,
    #[error("random_int({0}, {1}): min is above max")]
    MinAboveMax(i64, i64),
    #[error("random_choice(a, b, ...) needs at least one choice")]
    NoChoice,
    #[error("random_string(length) takes one whole number")]
    RandomStringArity,
    #[error("random_string(length): the length is at most {MAX_RANDOM_STRING} (1 MiB)")]
    TooLong,
    #[error("random_string(length) needs a length of 0 or more")]
    Negative,
    #[error("base64(x) takes one variable name or one quoted text")]
    Base64Arity,
    /// An unknown name, with the nearest known one if there is a close one.
    #[error("unknown function {name}(){}", match near {
        Some(f) => format!("; did you mean {f}()?"),
        None => format!("; the functions are {}", FUNCTIONS.join(", ")),
    })]
    Unknown { name: String, near: Option<&'static str> },
}

/// Splits `a, 'b c', 3` into arguments, keeping quoted ones marked.
fn split_args(s: &str) -> Result<Vec<(String, bool)>, CallError> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&c) = chars.peek() else { break };
        if c == '\'' || c == '"' {
            chars.next();
            let mut v = String::new();
            loop {
                match chars.next() {
                    Some(ch) if ch == c => break,
                    Some(ch) => v.push(ch),
                    None => return Err(CallError::UnclosedQuote),
                }
            }
            out.push((v, true));
        } else {
            let mut v = String::new();
            while let Some(&ch) = chars.peek() {
                if ch == ',' {
                    break;
                }
                v.push(ch);
                chars.next();
            }
            out.push((v.trim().to_string(), false));
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.next() {
            None => break,
            Some(',') => continue,
            Some(other) => return Err(CallError::Unexpected(other)),
        }
    }
    Ok(out)
}

fn parse_func(name: &str, args: &[(String, bool)]) -> Result<Func, CallError> {
    let none = |f: Func| {
        if args.is_empty() {
            Ok(f)
        } else {
            Err(CallError::NoArguments(name.to_string()))
        }
    };
    let int = |i: usize| -> Result<i64, CallError> {
        args.get(i)
            .and_then(|(a, _)| a.parse().ok())
            .ok_or_else(|| CallError::NotWhole(name.to_string()))
    };
    match name {
        "uuid" => none(Func::Uuid),
        "now" => none(Func::Now),
        "now_epoch" => none(Func::NowEpoch),
        "now_ms" => none(Func::NowMs),
        "user" => none(Func::User),
        "iteration" => none(Func::Iteration),
        "seq" => none(Func::Seq),
        "random_int" => {
            if args.len() != 2 {
                return Err(CallError::RandomIntArity);
            }
            let (a, b) = (int(0)?, int(1)?);
            if a > b {
                return Err(CallError::MinAboveMax(a, b));
            }
            Ok(Func::RandomInt(a, b))
        }
        "random_choice" => {
            if args.is_empty() {
                return Err(CallError::NoChoice);
            }
            Ok(Func::RandomChoice(args.iter().map(|(a, _)| a.clone()).collect()))
        }
        "random_string" => {
            if args.len() != 1 {
                return Err(CallError::RandomStringArity);
            }
            let n = int(0)?;
            match usize::try_from(n) {
                Ok(n) if n <= MAX_RANDOM_STRING => Ok(Func::RandomString(n)),
                Ok(_) => Err(CallError::TooLong),
                Err(_) => Err(CallError::Negative),
            }
        }
        "base64" => match args {
            [(a, true)] => Ok(Func::Base64(Arg::Lit(a.clone()))),
            [(a, false)] if is_ident(a) => Ok(Func::Base64(Arg::Var(a.clone()))),
            _ => Err(CallError::Base64Arity),
        },
        _ => Err(unknown_function(name)),
    }
}

fn unknown_function(name: &str) -> CallError {
    let near = FUNCTIONS
        .iter()
        .map(|f| (strsim::levenshtein(name, f), *f))
        .min()
        .filter(|(d, _)| *d <= 2)
        .map(|(_, f)| f);
    CallError::Unknown {
        name: name.to_string(),
        near,
    }
}

fn render_func(f: &Func, scope: &dyn Scope, out: &mut String) {
    use std::fmt::Write;
    match f {
        Func::Uuid => {
            let mut bytes = [0u8; 16];
            scope.rng().borrow_mut().fill(&mut bytes);
            let _ = write!(out, "{}", uuid::Builder::from_random_bytes(bytes).into_uuid());
        }
        Func::Now => out.push_str(&chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        Func::NowEpoch => {
            let _ = write!(out, "{}", chrono::Utc::now().timestamp());
        }
        Func::NowMs => {
            let _ = write!(out, "{}", chrono::Utc::now().timestamp_millis());
        }
        Func::User => {
            let _ = write!(out, "{}", scope.user());
        }
        Func::Iteration => {
            let _ = write!(out, "{}", scope.iteration());
        }
        Func::Seq => {
            let _ = write!(out, "{}", scope.next_seq());
        }
        Func::RandomInt(a, b) => {
            let _ = write!(out, "{}", scope.rng().borrow_mut().i64(*a..=*b));
        }
        Func::RandomChoice(c) => {
            let i = scope.rng().borrow_mut().usize(..c.len());
            out.push_str(&c[i]);
        }
        Func::RandomString(n) => {
            let mut rng = scope.rng().borrow_mut();
            out.extend((0..*n).map(|_| rng.alphanumeric()));
        }
        Func::Base64(arg) => {
            let v = match arg {
                Arg::Lit(s) => s.as_str(),
                Arg::Var(v) => scope.var(v).unwrap_or(""),
            };
            out.push_str(&base64::engine::general_purpose::STANDARD.encode(v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::{Cell, RefCell};
    use std::collections::HashMap;

    struct S {
        vars: HashMap<String, String>,
        seq: Cell<u64>,
        rng: RefCell<fastrand::Rng>,
    }

    impl Scope for S {
        fn var(&self, name: &str) -> Option<&str> {
            self.vars.get(name).map(String::as_str)
        }
        fn column(&self, feeder: &str, column: &str) -> Option<&str> {
            (feeder == "users" && column == "name").then_some("ann")
        }
        fn user(&self) -> u64 {
            7
        }
        fn iteration(&self) -> u64 {
            3
        }
        fn next_seq(&self) -> u64 {
            self.seq.replace(self.seq.get() + 1)
        }
        fn rng(&self) -> &RefCell<fastrand::Rng> {
            &self.rng
        }
    }

    fn scope() -> S {
        S {
            vars: [
                ("id".to_string(), "42".to_string()),
                ("tok".to_string(), "abc".to_string()),
            ]
            .into(),
            seq: Cell::new(0),
            rng: RefCell::new(fastrand::Rng::with_seed(1)),
        }
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn renders_variables_columns_functions_and_escapes() {
        let s = scope();
        let t = Template::parse(
            "/tasks/${id}?u=${user}&i=${iteration()}&n=${users.name}&c=$${x}&p=$5",
            &no_env,
        )
        .unwrap();
        assert_eq!(t.render(&s), "/tasks/42?u=7&i=3&n=ann&c=${x}&p=$5");
        assert_eq!(t.vars(), vec!["id".to_string(), "users.name".to_string()]);
        let t = Template::parse("${seq}-${seq()}-${base64(tok)}-${base64('a:b')}", &no_env).unwrap();
        assert_eq!(t.render(&s), "0-1-YWJj-YTpi");
        let r = Template::parse("${random_int(5, 9)}", &no_env)
            .unwrap()
            .render(&s)
            .parse::<i64>()
            .unwrap();
        assert!((5..=9).contains(&r));
        assert_eq!(
            Template::parse("${random_string(12)}", &no_env)
                .unwrap()
                .render(&s)
                .len(),
            12
        );
        let c = Template::parse("${random_choice(a, 'b c')}", &no_env)
            .unwrap()
            .render(&s);
        assert!(c == "a" || c == "b c");
        assert_eq!(Template::parse("${uuid}", &no_env).unwrap().render(&s).len(), 36);
        let now = Template::parse("${now}", &no_env).unwrap().render(&s);
        assert!(chrono::DateTime::parse_from_rfc3339(&now).is_ok(), "{now}");
    }

    #[test]
    fn a_bound_counts_each_part_at_its_most_and_saturates() {
        let bound = |t: &str| {
            Template::parse(t, &no_env)
                .unwrap()
                .bound(&|v| if v == "big" { u64::MAX / 2 + 1 } else { 10 }, &|_, _| 7)
        };
        assert_eq!(bound("ab${id}${users.name}"), 2 + 10 + 7);
        assert_eq!(bound("${uuid}${now}${seq}${random_int(-5, 5)}"), 36 + 3 * 20);
        assert_eq!(bound("${random_string(1000)}${random_choice(a, 'bcd')}"), 1003);
        assert_eq!(bound("${base64(id)}${base64('abcd')}"), 16 + 8);
        // A doubling chain reads as huge, never wraps round to small.
        assert_eq!(bound("${big}${big}${big}"), u64::MAX);
        // The bound is never below what rendering gives.
        let s = scope();
        for t in [
            "x${id}${tok}",
            "${base64(tok)}",
            "${uuid}",
            "${now}",
            "${random_int(-9, -1)}",
        ] {
            let rendered = Template::parse(t, &no_env).unwrap().render(&s).len() as u64;
            assert!(rendered <= bound(t), "{t}: {rendered}");
        }
    }

    #[test]
    fn env_values_are_secret_and_never_displayed() {
        let env = |n: &str| (n == "TOKEN").then(|| "s3cret".to_string());
        let t = Template::parse("Bearer ${env:TOKEN}", &env).unwrap();
        assert!(t.has_secret());
        assert_eq!(t.render(&scope()), "Bearer s3cret");
        assert_eq!(t.to_string(), "Bearer ${env:…}");
        let e = Template::parse("${env:MISSING}", &env).unwrap_err();
        assert!(e.message.contains("MISSING is not set"));
        let d = Template::parse("${env:MISSING:-http://127.0.0.1:8080}", &env).unwrap();
        assert_eq!(d.render(&scope()), "http://127.0.0.1:8080");
    }

    #[test]
    fn bad_templates_say_where_and_why() {
        let e = Template::parse("abc ${randon_int(1,2)}", &no_env).unwrap_err();
        assert_eq!(e.offset, 4);
        assert!(e.message.contains("did you mean random_int()"), "{}", e.message);
        assert!(Template::parse("${id", &no_env)
            .unwrap_err()
            .message
            .contains("not closed"));
        assert!(Template::parse("${random_int(9, 1)}", &no_env)
            .unwrap_err()
            .message
            .contains("above max"));
        assert!(Template::parse("${a b}", &no_env).is_err());
        assert!(Template::parse("${}", &no_env).is_err());
        assert!(Template::parse("${now(1)}", &no_env).is_err());
    }

    #[test]
    fn function_call_errors_read_as_sentences() {
        let message = |t: &str| Template::parse(t, &no_env).unwrap_err().message;
        assert_eq!(message("${now(1)}"), "`now(1)`: now() takes no arguments");
        assert_eq!(
            message("${random_int(1, x)}"),
            "`random_int(1, x)`: random_int() needs whole numbers"
        );
        assert_eq!(
            message("${random_int(9, 1)}"),
            "`random_int(9, 1)`: random_int(9, 1): min is above max"
        );
        assert_eq!(
            message("${base64('a' 'b')}"),
            "`base64('a' 'b')`: unexpected `'` between arguments"
        );
        assert_eq!(
            message("${random_string(99999999)}"),
            "`random_string(99999999)`: random_string(length): the length is at most 1048576 (1 MiB)"
        );
        assert_eq!(
            message("${nothing_like_it(1)}"),
            format!(
                "`nothing_like_it(1)`: unknown function nothing_like_it(); the functions are {}",
                FUNCTIONS.join(", ")
            )
        );
    }
}
