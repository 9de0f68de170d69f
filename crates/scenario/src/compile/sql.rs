//! SQL steps: statements, their parameters and checks, and transactions.

use super::vars::Known;
use super::Cx;
use crate::raw::{self, Sp};
use crest_model::monitor::PostgresSpec;

/// A statement as written: its name, query and parameters.
type RawStatement<'s> = (Option<&'s Sp<String>>, &'s Sp<String>, Option<&'s Vec<Sp<String>>>);

impl Cx<'_> {
    /// `database:`, the server that `sql` steps run on.
    pub(super) fn database(&mut self, db: &raw::Database) {
        self.has_database = true;
        let url = self.env_text(&db.url);
        let password = db.password.as_ref().and_then(|p| self.env_text(p));
        let timeout = db
            .statement_timeout
            .as_ref()
            .and_then(|t| self.positive_duration(t, "statement_timeout"));
        if let Some(url) = url {
            match crest_pg::PgTarget::parse(&url, password.as_deref(), timeout) {
                Ok(t) => {
                    self.database = Some(t);
                    self.database_spec = Some(PostgresSpec { url, password });
                }
                Err(e) => self.err(db.url.at(), format!("database: {e}"), None),
            }
        }
    }

    pub(super) fn sql(&mut self, q: &Sp<raw::Sql>, known: &mut Known) -> Option<crest_flow::plan::SqlStep> {
        if !self.has_database {
            self.err(
                q.at(),
                "an `sql` step needs `database:` at the top of the file",
                Some("database: {url: \"postgres://user@127.0.0.1:5432/db\"}".into()),
            );
            return None;
        }
        let mut statements = Vec::new();
        let raw: Vec<RawStatement<'_>> = match (&q.query, &q.statements) {
            (Some(query), None) => vec![(None, query, q.params.as_ref())],
            (None, Some(list)) if !list.is_empty() => list
                .iter()
                .map(|s| (s.name.as_ref(), &s.query, s.params.as_ref()))
                .collect(),
            _ => {
                self.err(q.at(), "`sql` has one `query` or a list of `statements`", None);
                return None;
            }
        };
        let first_words = |sql: &str| sql.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
        let step_name = q
            .name
            .as_ref()
            .map_or_else(|| format!("SQL {}", first_words(raw[0].1)), |n| n.to_string());
        let name = self.name_id(&step_name);
        let transaction = q.transaction.unwrap_or(false);
        for (i, (n, query, params)) in raw.iter().enumerate() {
            let mut ps = Vec::new();
            for p in params.iter().flat_map(|v| v.iter()) {
                if let Some(t) = self.template(p, known) {
                    ps.push(t);
                }
            }
            let sname = match n {
                Some(n) => n.to_string(),
                None if transaction => format!("{step_name} / {}: {}", i + 1, first_words(query)),
                None => step_name.clone(),
            };
            let id = if transaction {
                // A statement counts inside its transaction, once; its own figures are a
                // sub-measure. A name already in use keeps the role it has.
                let new = !self.name_ids.contains_key(&sname);
                let id = self.name_id(&sname);
                if new && id != name {
                    self.part_of[id as usize] = Some(name);
                }
                id
            } else {
                name
            };
            statements.push(crest_flow::plan::SqlStatement {
                name: id,
                query: query.to_string(),
                params: ps,
            });
        }
        let mut checks = Vec::new();
        if let Some(c) = &q.check {
            if let Some(n) = &c.rows {
                checks.push(crest_flow::plan::SqlCheck::Rows(**n));
            }
            if let Some(n) = &c.rows_min {
                checks.push(crest_flow::plan::SqlCheck::RowsMin(**n));
            }
            for (col, v) in c.value.iter().flatten() {
                checks.push(crest_flow::plan::SqlCheck::Value(col.clone(), v.to_string()));
            }
        }
        let extract: Vec<(String, String)> = q
            .extract
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect();
        for (var, _) in &extract {
            known.add(var);
        }
        Some(crest_flow::plan::SqlStep {
            name,
            statements,
            transaction,
            extract,
            checks,
        })
    }
}
