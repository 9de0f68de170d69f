//! Conditions of `if:` steps: comparisons of templated values, joined by `and`, `or`, `not`.
//!
//! A user picks its next step from what the service told it (the state of the plan it got back,
//! the number of items in a list), so a condition compares rendered values:
//! `${state} == "RUNNING" and ${attempts} < 3`. Values compare as numbers when both sides are
//! numbers and as text otherwise; a value on its own is true unless it is empty, `false`, `0`
//! or `null`. Like templates, conditions are parsed once when the scenario is validated, with
//! the offset of any error, and rendering at run time only looks values up.

use crate::template::{Scope, Template, TemplateError};
use regex::Regex;

/// A parsed condition.
#[derive(Clone, Debug)]
pub enum Condition {
    /// A value on its own: true unless empty, `false`, `0` or `null`.
    Value(Template),
    /// Two values compared.
    Compare(Template, Op, Template),
    /// A value matched against a regular expression (anywhere in it).
    Matches(Template, Regex),
    /// Both.
    And(Box<Condition>, Box<Condition>),
    /// Either.
    Or(Box<Condition>, Box<Condition>),
    /// Not.
    Not(Box<Condition>),
}

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `contains`: the left text contains the right.
    Contains,
}

/// A condition could not be parsed; `offset` is the byte offset in its text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ConditionError {
    /// Byte offset of the problem in the text.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

/// Deepest nesting of parentheses and `not`: a condition is a line of YAML, not a program, and
/// the parser recurses.
const MAX_DEPTH: usize = 32;

impl Condition {
    /// Parses `text`; `env` resolves `${env:NAME}` in its values, as for templates.
    pub fn parse(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Condition, ConditionError> {
        let tokens = lex(text, env)?;
        if tokens.is_empty() {
            return Err(ConditionError {
                offset: 0,
                message: "the condition is empty".into(),
            });
        }
        let mut p = Parser {
            tokens,
            at: 0,
            end: text.len(),
        };
        let c = p.or(0)?;
        match p.tokens.get(p.at) {
            None => Ok(c),
            Some((offset, t)) => Err(ConditionError {
                offset: *offset,
                message: format!("unexpected {}: join conditions with `and` or `or`", t.describe()),
            }),
        }
    }

    /// Whether it holds for this user now.
    pub fn holds(&self, scope: &dyn Scope) -> bool {
        match self {
            Condition::Value(t) => truthy(&t.render(scope)),
            Condition::Compare(a, op, b) => compare(&a.render(scope), *op, &b.render(scope)),
            Condition::Matches(t, re) => re.is_match(&t.render(scope)),
            Condition::And(a, b) => a.holds(scope) && b.holds(scope),
            Condition::Or(a, b) => a.holds(scope) || b.holds(scope),
            Condition::Not(c) => !c.holds(scope),
        }
    }

    /// The variables it reads, for the check that each is set before it is used.
    pub fn vars(&self) -> Vec<String> {
        match self {
            Condition::Value(t) | Condition::Matches(t, _) => t.vars(),
            Condition::Compare(a, _, b) => [a.vars(), b.vars()].concat(),
            Condition::And(a, b) | Condition::Or(a, b) => [a.vars(), b.vars()].concat(),
            Condition::Not(c) => c.vars(),
        }
    }
}

fn truthy(v: &str) -> bool {
    !matches!(v.trim(), "" | "false" | "0" | "null")
}

fn compare(a: &str, op: Op, b: &str) -> bool {
    use std::cmp::Ordering;
    let ord = match (a.trim().parse::<f64>(), b.trim().parse::<f64>()) {
        (Ok(x), Ok(y)) if x.is_finite() && y.is_finite() => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
        _ => a.cmp(b),
    };
    match op {
        Op::Eq => ord == Ordering::Equal,
        Op::Ne => ord != Ordering::Equal,
        Op::Lt => ord == Ordering::Less,
        Op::Le => ord != Ordering::Greater,
        Op::Gt => ord == Ordering::Greater,
        Op::Ge => ord != Ordering::Less,
        Op::Contains => a.contains(b),
    }
}

#[derive(Debug)]
enum Token {
    /// A value: `${...}`, a quoted string (which may hold templates), a number or a bare word.
    Value(Template, String),
    Op(Op),
    Matches,
    And,
    Or,
    Not,
    Open,
    Close,
}

impl Token {
    fn describe(&self) -> String {
        match self {
            Token::Value(_, text) => format!("value {text}"),
            Token::Op(_) | Token::Matches => "comparison".into(),
            Token::And => "`and`".into(),
            Token::Or => "`or`".into(),
            Token::Not => "`not`".into(),
            Token::Open => "`(`".into(),
            Token::Close => "`)`".into(),
        }
    }
}

fn lex(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Vec<(usize, Token)>, ConditionError> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let template = |s: &str, at: usize| {
        Template::parse(s, env).map_err(|e: TemplateError| ConditionError {
            offset: at + e.offset,
            message: e.message,
        })
    };
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let two = text.get(i..i + 2).unwrap_or("");
        let (token, len) = match (c, two) {
            (_, "==") => (Token::Op(Op::Eq), 2),
            (_, "!=") => (Token::Op(Op::Ne), 2),
            (_, "<=") => (Token::Op(Op::Le), 2),
            (_, ">=") => (Token::Op(Op::Ge), 2),
            (_, "&&") => (Token::And, 2),
            (_, "||") => (Token::Or, 2),
            (b'<', _) => (Token::Op(Op::Lt), 1),
            (b'>', _) => (Token::Op(Op::Gt), 1),
            (b'!', _) => (Token::Not, 1),
            (b'(', _) => (Token::Open, 1),
            (b')', _) => (Token::Close, 1),
            (b'=', _) => {
                return Err(ConditionError {
                    offset: i,
                    message: "`=` alone: compare with `==`".into(),
                })
            }
            (b'"' | b'\'', _) => {
                let Some(close) = text[i + 1..].find(c as char) else {
                    return Err(ConditionError {
                        offset: i,
                        message: "this quote is never closed".into(),
                    });
                };
                let inner = &text[i + 1..i + 1 + close];
                (
                    Token::Value(template(inner, i + 1)?, text[i..i + 2 + close].to_string()),
                    close + 2,
                )
            }
            (b'$', _) if text[i..].starts_with("${") => {
                let Some(close) = text[i..].find('}') else {
                    return Err(ConditionError {
                        offset: i,
                        message: "this `${` is never closed".into(),
                    });
                };
                let src = &text[i..=i + close];
                (Token::Value(template(src, i)?, src.to_string()), close + 1)
            }
            _ => {
                let len = text[i..]
                    .find(|ch: char| ch.is_whitespace() || "()<>=!&|\"'".contains(ch))
                    .unwrap_or(text.len() - i);
                let word = &text[i..i + len];
                let token = match word {
                    "and" => Token::And,
                    "or" => Token::Or,
                    "not" => Token::Not,
                    "contains" => Token::Op(Op::Contains),
                    "matches" => Token::Matches,
                    _ if word.contains('$') => {
                        return Err(ConditionError {
                            offset: i,
                            message: format!("{word:?}: write a variable as ${{name}}"),
                        })
                    }
                    // A number or a bare word stands for itself (`true`, `RUNNING`).
                    _ => Token::Value(Template::literal(word), word.to_string()),
                };
                (token, len.max(1))
            }
        };
        out.push((start, token));
        i += len;
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<(usize, Token)>,
    at: usize,
    end: usize,
}

impl Parser {
    fn offset(&self) -> usize {
        self.tokens.get(self.at).map_or(self.end, |(o, _)| *o)
    }

    fn error(&self, message: impl Into<String>) -> ConditionError {
        ConditionError {
            offset: self.offset(),
            message: message.into(),
        }
    }

    fn eat(&mut self, f: impl Fn(&Token) -> bool) -> bool {
        if self.tokens.get(self.at).is_some_and(|(_, t)| f(t)) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn or(&mut self, depth: usize) -> Result<Condition, ConditionError> {
        let mut c = self.and(depth)?;
        while self.eat(|t| matches!(t, Token::Or)) {
            c = Condition::Or(Box::new(c), Box::new(self.and(depth)?));
        }
        Ok(c)
    }

    fn and(&mut self, depth: usize) -> Result<Condition, ConditionError> {
        let mut c = self.not(depth)?;
        while self.eat(|t| matches!(t, Token::And)) {
            c = Condition::And(Box::new(c), Box::new(self.not(depth)?));
        }
        Ok(c)
    }

    fn not(&mut self, depth: usize) -> Result<Condition, ConditionError> {
        if depth > MAX_DEPTH {
            return Err(self.error(format!("nested more than {MAX_DEPTH} deep")));
        }
        if self.eat(|t| matches!(t, Token::Not)) {
            return Ok(Condition::Not(Box::new(self.not(depth + 1)?)));
        }
        if self.eat(|t| matches!(t, Token::Open)) {
            let c = self.or(depth + 1)?;
            if !self.eat(|t| matches!(t, Token::Close)) {
                return Err(self.error("expected `)`"));
            }
            return Ok(c);
        }
        let left = self.value()?;
        let at = self.offset();
        match self.tokens.get(self.at).map(|(_, t)| t) {
            Some(Token::Op(op)) => {
                let op = *op;
                self.at += 1;
                Ok(Condition::Compare(left, op, self.value()?))
            }
            Some(Token::Matches) => {
                self.at += 1;
                let right = self.value()?;
                let Some(pattern) = right.as_literal() else {
                    return Err(ConditionError {
                        offset: at,
                        message: "`matches` takes a regular expression written out, without ${...}".into(),
                    });
                };
                let re = Regex::new(&pattern).map_err(|e| ConditionError {
                    offset: at,
                    message: format!("{pattern:?} is not a valid regular expression: {e}"),
                })?;
                Ok(Condition::Matches(left, re))
            }
            _ => Ok(Condition::Value(left)),
        }
    }

    fn value(&mut self) -> Result<Template, ConditionError> {
        match self.tokens.get(self.at) {
            Some((_, Token::Value(t, _))) => {
                let t = t.clone();
                self.at += 1;
                Ok(t)
            }
            Some((_, t)) => Err(self.error(format!("expected a value, found {}", t.describe()))),
            None => Err(self.error("expected a value at the end")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::HashMap;

    struct Vars(HashMap<&'static str, &'static str>, RefCell<fastrand::Rng>);

    impl Scope for Vars {
        fn var(&self, name: &str) -> Option<&str> {
            self.0.get(name).copied()
        }
        fn column(&self, _: &str, _: &str) -> Option<&str> {
            None
        }
        fn user(&self) -> u64 {
            0
        }
        fn iteration(&self) -> u64 {
            0
        }
        fn next_seq(&self) -> u64 {
            0
        }
        fn rng(&self) -> &RefCell<fastrand::Rng> {
            &self.1
        }
    }

    fn holds(text: &str) -> bool {
        let vars = Vars(
            HashMap::from([("state", "RUNNING"), ("n", "10"), ("empty", ""), ("items", "[1,2]")]),
            RefCell::new(fastrand::Rng::with_seed(1)),
        );
        Condition::parse(text, &|_| None)
            .unwrap_or_else(|e| panic!("{text}: {e} at {}", e.offset))
            .holds(&vars)
    }

    #[test]
    fn comparisons_are_numeric_when_both_sides_are_numbers() {
        assert!(holds(r#"${state} == "RUNNING""#));
        assert!(holds("${state} == RUNNING"));
        assert!(holds("${state} != DONE"));
        // 10 > 9 as numbers, though "10" < "9" as text.
        assert!(holds("${n} > 9"));
        assert!(holds("${n} >= 10 and ${n} <= 10.0"));
        assert!(!holds("${n} < 2"));
        assert!(holds(r#""${state}-x" == "RUNNING-x""#));
        assert!(holds("${items} contains 2"));
        assert!(holds("${state} matches '^RUN'"));
    }

    #[test]
    fn values_alone_and_logic() {
        assert!(holds("${state}"));
        assert!(!holds("${empty}"));
        assert!(!holds("${missing}"));
        assert!(holds("not ${empty}"));
        assert!(holds("${empty} or ${n} == 10"));
        assert!(!holds("${state} == DONE || ${n} == 11"));
        assert!(holds("!(${state} == DONE) && (${n} == 10 or ${empty})"));
        assert!(!holds("false"));
        assert!(holds("true"));
    }

    #[test]
    fn errors_say_where() {
        let err = |t: &str| Condition::parse(t, &|_| None).unwrap_err();
        assert_eq!(err("${state} = 1").offset, 9);
        assert!(err("${state} = 1").message.contains("=="));
        assert_eq!(err("${state} == ").message, "expected a value at the end");
        assert_eq!(err("(${n} > 1").message, "expected `)`");
        assert!(err("${n} > 1 ${state}").message.contains("and"));
        assert!(err(r#"${state} == "open"#).message.contains("never closed"));
        assert!(err("${n} matches ${state}").message.contains("written out"));
        assert!(err("${n} matches '('").message.contains("regular expression"));
        // A template's own error keeps its place in the condition.
        let e = err("${n} == ${unknown_fn()}");
        assert!(e.offset >= 8 && e.message.contains("unknown_fn"), "{e:?}");
        assert!(err("$state == 1").message.contains("${name}"));
        assert!(err("").message.contains("empty"));
        let deep = format!("{}1{}", "(".repeat(40), ")".repeat(40));
        assert!(err(&deep).message.contains("nested"));
    }

    #[test]
    fn it_names_the_variables_it_reads() {
        let c = Condition::parse("${a} == 1 and not ${b} matches 'x'", &|_| None).unwrap();
        assert_eq!(c.vars(), vec!["a".to_string(), "b".to_string()]);
    }
}
