//! The part of bash's syntax that copied curl commands use: words in single, double and ANSI-C
//! (`$'...'`, Chrome's form for bodies) quotes, backslash escapes and continuations, comments,
//! and commands separated by newlines, `;`, `&&` or `||`. Nothing is expanded: a copied command
//! has no variables worth reading, and a `$` is kept as it is.

/// One command's words, and the line it starts on (counted from 1), for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Command {
    pub line: usize,
    pub words: Vec<String>,
    /// Shell variables it reads (`$TOKEN`, `${TOKEN}` outside single quotes), which are sent
    /// as written since nothing is expanded.
    pub variables: Vec<String>,
}

/// The commands of `text`, empty ones left out.
pub(crate) fn commands(text: &str) -> Result<Vec<Command>, String> {
    let mut lexer = Lexer {
        chars: text.chars().collect(),
        at: 0,
        line: 1,
        variables: Vec::new(),
    };
    let mut out = Vec::new();
    let mut current: Option<Command> = None;
    let mut finish = |current: &mut Option<Command>, variables: &mut Vec<String>| {
        if let Some(mut c) = current.take() {
            c.variables = std::mem::take(variables);
            c.variables.dedup();
            out.push(c);
        }
        variables.clear();
    };
    while let Some(token) = lexer.next_token()? {
        match token {
            Token::Word(line, w) => current
                .get_or_insert_with(|| Command {
                    line,
                    words: Vec::new(),
                    variables: Vec::new(),
                })
                .words
                .push(w),
            Token::End => finish(&mut current, &mut lexer.variables),
        }
    }
    finish(&mut current, &mut lexer.variables);
    Ok(out)
}

enum Token {
    /// A word and the line it started on.
    Word(usize, String),
    /// The end of a command.
    End,
}

struct Lexer {
    chars: Vec<char>,
    at: usize,
    line: usize,
    variables: Vec<String>,
}

impl Lexer {
    /// Notes the shell variable a `$` at the current place would expand.
    fn variable(&mut self) {
        let start = self.at + 1 + usize::from(self.peek(1) == Some('{'));
        let name: String = self.chars[start.min(self.chars.len())..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == '_')
            .collect();
        if name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            self.variables.push(name);
        }
    }

    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek(0)?;
        self.at += 1;
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn next_token(&mut self) -> Result<Option<Token>, String> {
        // Blanks and continuations between words.
        loop {
            match (self.peek(0), self.peek(1)) {
                (Some(' ' | '\t' | '\r'), _) => {
                    self.bump();
                }
                (Some('\\'), Some('\n')) => {
                    self.bump();
                    self.bump();
                }
                (Some('\\'), Some('\r')) if self.peek(2) == Some('\n') => {
                    self.at += 2;
                    self.bump();
                }
                (Some('#'), _) => {
                    while !matches!(self.peek(0), None | Some('\n')) {
                        self.bump();
                    }
                }
                _ => break,
            }
        }
        let Some(c) = self.peek(0) else { return Ok(None) };
        match (c, self.peek(1)) {
            ('\n' | ';', _) => {
                self.bump();
                return Ok(Some(Token::End));
            }
            ('&', Some('&')) | ('|', Some('|')) => {
                self.bump();
                self.bump();
                return Ok(Some(Token::End));
            }
            ('|' | '&' | '<' | '>' | '(' | ')' | '`', _) => {
                return Err(format!(
                    "line {}: `{c}`: pipes, redirections, subshells and background jobs are not part of a curl command",
                    self.line
                ))
            }
            _ => {}
        }
        let line = self.line;
        let mut word: Vec<u8> = Vec::new();
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\r' | '\n' | ';' | '|' | '&' | '<' | '>' | '(' | ')' => break,
                '\\' => {
                    self.bump();
                    match self.bump() {
                        // A continuation inside a word joins its halves.
                        Some('\n') => {}
                        Some(c) => push(&mut word, c),
                        None => push(&mut word, '\\'),
                    }
                }
                '\'' => {
                    self.bump();
                    self.single(&mut word, line)?;
                }
                '"' => {
                    self.bump();
                    self.double(&mut word, line)?;
                }
                '$' if self.peek(1) == Some('\'') => {
                    self.at += 2;
                    self.ansi_c(&mut word, line)?;
                }
                // `$"..."` is a translated string: without a catalog, its text.
                '$' if self.peek(1) == Some('"') => {
                    self.at += 2;
                    self.double(&mut word, line)?;
                }
                '`' => {
                    return Err(format!(
                        "line {}: command substitution (`) is not part of a curl command",
                        self.line
                    ))
                }
                c => {
                    if c == '$' {
                        self.variable();
                    }
                    self.bump();
                    push(&mut word, c);
                }
            }
        }
        let word = String::from_utf8(word).map_err(|_| {
            format!("line {line}: a word is not UTF-8 text (a \\x escape of a binary byte); give binary bodies as --data-binary @file")
        })?;
        Ok(Some(Token::Word(line, word)))
    }

    fn single(&mut self, word: &mut Vec<u8>, line: usize) -> Result<(), String> {
        loop {
            match self.bump() {
                None => return Err(format!("line {line}: a single quote is never closed")),
                Some('\'') => return Ok(()),
                Some(c) => push(word, c),
            }
        }
    }

    fn double(&mut self, word: &mut Vec<u8>, line: usize) -> Result<(), String> {
        loop {
            if self.peek(0) == Some('$') {
                self.variable();
            }
            match self.bump() {
                None => return Err(format!("line {line}: a double quote is never closed")),
                Some('"') => return Ok(()),
                // Inside double quotes a backslash escapes only these; before anything else it
                // is itself.
                Some('\\') => match self.peek(0) {
                    Some('\n') => {
                        self.bump();
                    }
                    Some(c @ ('"' | '\\' | '$' | '`')) => {
                        self.bump();
                        push(word, c);
                    }
                    _ => push(word, '\\'),
                },
                Some(c) => push(word, c),
            }
        }
    }

    /// Bash's `$'...'`: C escapes, which may give bytes (`\xHH`) as well as characters.
    fn ansi_c(&mut self, word: &mut Vec<u8>, line: usize) -> Result<(), String> {
        loop {
            let c = self
                .bump()
                .ok_or_else(|| format!("line {line}: a $'...' quote is never closed"))?;
            match c {
                '\'' => return Ok(()),
                '\\' => {
                    let e = self
                        .bump()
                        .ok_or_else(|| format!("line {line}: a $'...' quote is never closed"))?;
                    match e {
                        'a' => word.push(0x07),
                        'b' => word.push(0x08),
                        'e' | 'E' => word.push(0x1b),
                        'f' => word.push(0x0c),
                        'n' => word.push(b'\n'),
                        'r' => word.push(b'\r'),
                        't' => word.push(b'\t'),
                        'v' => word.push(0x0b),
                        '\\' | '\'' | '"' | '?' => push(word, e),
                        '0'..='7' => {
                            let mut n = e.to_digit(8).unwrap_or(0);
                            for _ in 0..2 {
                                match self.peek(0).and_then(|c| c.to_digit(8)) {
                                    Some(d) => {
                                        n = n * 8 + d;
                                        self.bump();
                                    }
                                    None => break,
                                }
                            }
                            word.push((n & 0xff) as u8);
                        }
                        'x' => match self.hex(2) {
                            Some(n) => word.push(n as u8),
                            None => word.extend_from_slice(b"\\x"),
                        },
                        'u' | 'U' => {
                            let digits = if e == 'u' { 4 } else { 8 };
                            match self.hex(digits) {
                                Some(n) => match char::from_u32(n) {
                                    Some(ch) => push(word, ch),
                                    None => {
                                        return Err(format!("line {line}: \\{e}{n:X} is not a character"));
                                    }
                                },
                                None => {
                                    word.push(b'\\');
                                    push(word, e);
                                }
                            }
                        }
                        'c' => {
                            let x = self
                                .bump()
                                .ok_or_else(|| format!("line {line}: a $'...' quote is never closed"))?;
                            word.push((x as u32 & 0x1f) as u8);
                        }
                        other => {
                            word.push(b'\\');
                            push(word, other);
                        }
                    }
                }
                c => push(word, c),
            }
        }
    }

    /// Up to `max` hex digits, at least one.
    fn hex(&mut self, max: usize) -> Option<u32> {
        let mut n: u32 = 0;
        let mut seen = 0;
        while seen < max {
            match self.peek(0).and_then(|c| c.to_digit(16)) {
                Some(d) => {
                    n = n.wrapping_mul(16).wrapping_add(d);
                    self.bump();
                    seen += 1;
                }
                None => break,
            }
        }
        (seen > 0).then_some(n)
    }
}

fn push(word: &mut Vec<u8>, c: char) {
    let mut buf = [0u8; 4];
    word.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

/// A word as bash would read it back: bare when it is plain, in single quotes otherwise, and as
/// `$'...'` when it has line breaks or other control characters, so it stays on one line.
pub(crate) fn quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_string();
    }
    if word.chars().any(char::is_control) {
        let mut out = String::from("$'");
        for c in word.chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\\' => out.push_str("\\\\"),
                '\'' => out.push_str("\\'"),
                c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('\'');
        return out;
    }
    format!("'{}'", word.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn words(text: &str) -> Vec<Vec<String>> {
        commands(text).unwrap().into_iter().map(|c| c.words).collect()
    }

    #[test]
    fn quotes_and_escapes_are_read_as_bash_does() {
        assert_eq!(
            words(r#"curl 'a b' "c \"d\" \$e \x" f\ g h'i'"j""#),
            vec![vec!["curl", "a b", "c \"d\" $e \\x", "f g", "hij"]]
        );
    }

    #[test]
    fn chrome_ansi_c_quotes_are_decoded() {
        let w = words(r#"curl --data-raw $'{"a":"it\'s\\n","b":"x\ny\tz","c":"\u00e9\x41\101"}'"#);
        assert_eq!(w[0][2], "{\"a\":\"it's\\n\",\"b\":\"x\ny\tz\",\"c\":\"éAA\"}");
    }

    #[test]
    fn continuations_and_separators_split_commands() {
        let text = "curl 'https://a/1' \\\n  -H 'x: 1' ;\ncurl https://a/2 \\\r\n -d b\n\n# a comment\ncurl https://a/3 && curl https://a/4";
        let cmds = commands(text).unwrap();
        let w: Vec<Vec<String>> = cmds.iter().map(|c| c.words.clone()).collect();
        assert_eq!(
            w,
            vec![
                vec!["curl", "https://a/1", "-H", "x: 1"],
                vec!["curl", "https://a/2", "-d", "b"],
                vec!["curl", "https://a/3"],
                vec!["curl", "https://a/4"],
            ]
        );
        assert_eq!(cmds.iter().map(|c| c.line).collect::<Vec<_>>(), vec![1, 3, 7, 7]);
    }

    #[test]
    fn shell_variables_are_kept_and_named() {
        let c = commands("curl -H \"Authorization: Bearer $TOKEN\" '$NOT' ${HOST}/x $1 \\$ESC\ncurl b").unwrap();
        assert_eq!(c[0].words[2], "Authorization: Bearer $TOKEN");
        assert_eq!(c[0].variables, vec!["TOKEN", "HOST"]);
        assert!(c[1].variables.is_empty());
    }

    #[test]
    fn a_newline_inside_quotes_is_part_of_the_word() {
        assert_eq!(words("curl -d 'a\nb' x"), vec![vec!["curl", "-d", "a\nb", "x"]]);
    }

    #[test]
    fn unclosed_quotes_and_pipes_are_errors() {
        assert!(commands("curl 'abc").unwrap_err().contains("never closed"));
        assert!(commands("curl $'abc").unwrap_err().contains("never closed"));
        assert!(commands("curl x | jq .").unwrap_err().contains("pipes"));
        assert!(commands("curl $'\\xff'").unwrap_err().contains("UTF-8"));
    }

    #[test]
    fn quoting_reads_back_the_same_words() {
        for w in ["plain/path", "a b", "it's", "x\ny", "", "$'"] {
            let text = format!("curl {}", quote(w));
            assert_eq!(words(&text), vec![vec!["curl".to_string(), w.to_string()]], "{text}");
        }
    }
}
