//! A cookie jar per virtual user: what a browser or Locust's HttpUser keeps between requests,
//! so a session cookie set at login goes back with every later request.
//!
//! A subset of RFC 6265 that load tests need: host-only cookies for the host that set them
//! (a Domain attribute widens them to its subdomains), Path prefix matching, Secure, and removal
//! by Max-Age <= 0 or an Expires date in the past. Expiry of live cookies during a run is not
//! tracked: runs are short, and sessions that expire mid-run are the service's business.

/// One user's cookies.
#[derive(Clone, Debug, Default)]
pub struct CookieJar {
    cookies: Vec<Cookie>,
}

#[derive(Clone, Debug)]
struct Cookie {
    name: String,
    value: String,
    /// Lowercase host, without the port.
    domain: String,
    /// Subdomains of `domain` match too (a Domain attribute was given).
    subdomains: bool,
    path: String,
    secure: bool,
}

impl CookieJar {
    /// Remembers the cookies of `Set-Cookie` headers answered by `host` for `path`.
    pub fn store<'a>(&mut self, host: &str, path: &str, set_cookies: impl IntoIterator<Item = &'a str>) {
        let host = host.to_ascii_lowercase();
        for line in set_cookies {
            let mut parts = line.split(';');
            let Some((name, value)) = parts.next().and_then(|nv| nv.split_once('=')) else {
                continue;
            };
            let name = name.trim();
            if name.is_empty() {
                continue;
            }
            let mut c = Cookie {
                name: name.to_string(),
                value: value.trim().trim_matches('"').to_string(),
                domain: host.clone(),
                subdomains: false,
                path: default_path(path),
                secure: false,
            };
            let mut expired = false;
            for attr in parts {
                let (k, v) = attr.split_once('=').unwrap_or((attr, ""));
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
                match k.as_str() {
                    "domain" if !v.is_empty() => {
                        let d = v.trim_start_matches('.').to_ascii_lowercase();
                        // A server may not set cookies for another site.
                        if !domain_match(&host, &d) {
                            expired = true;
                        }
                        c.domain = d;
                        c.subdomains = true;
                    }
                    "path" if v.starts_with('/') => c.path = v.to_string(),
                    "secure" => c.secure = true,
                    "max-age" => expired |= v.parse::<i64>().is_ok_and(|s| s <= 0),
                    "expires" => expired |= expires_in_past(v),
                    _ => {}
                }
            }
            self.cookies
                .retain(|o| !(o.name == c.name && o.domain == c.domain && o.path == c.path));
            if !expired {
                self.cookies.push(c);
            }
        }
    }

    /// The `Cookie` header value for a request to `host` and `path`, if any cookie matches.
    pub fn header(&self, host: &str, path: &str, https: bool) -> Option<String> {
        let host = host.to_ascii_lowercase();
        let path = path.split('?').next().unwrap_or("/");
        let mut out = String::new();
        for c in &self.cookies {
            let host_ok = if c.subdomains {
                domain_match(&host, &c.domain)
            } else {
                host == c.domain
            };
            if host_ok && path_match(path, &c.path) && (https || !c.secure) {
                if !out.is_empty() {
                    out.push_str("; ");
                }
                out.push_str(&c.name);
                out.push('=');
                out.push_str(&c.value);
            }
        }
        (!out.is_empty()).then_some(out)
    }

    /// True when the jar holds no cookie.
    pub fn is_empty(&self) -> bool {
        self.cookies.is_empty()
    }
}

fn domain_match(host: &str, domain: &str) -> bool {
    host == domain || host.strip_suffix(domain).is_some_and(|p| p.ends_with('.'))
}

fn path_match(path: &str, cookie_path: &str) -> bool {
    path == cookie_path
        || path
            .strip_prefix(cookie_path)
            .is_some_and(|rest| cookie_path.ends_with('/') || rest.starts_with('/'))
}

/// RFC 6265 5.1.4: the request path up to its last `/`.
fn default_path(path: &str) -> String {
    let path = path.split('?').next().unwrap_or("/");
    match path.rfind('/') {
        Some(0) | None => "/".into(),
        Some(i) => path[..i].to_string(),
    }
}

/// Only the year is read: a cookie is dropped when it expired in an earlier year, which is how
/// servers delete cookies (`Expires=Thu, 01 Jan 1970 00:00:00 GMT`).
fn expires_in_past(v: &str) -> bool {
    let year = v
        .split([' ', '-'])
        .filter_map(|w| w.parse::<u32>().ok())
        .find(|n| *n >= 1970);
    let now_year = 1970
        + std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() / 31_556_952) as u32;
    year.is_some_and(|y| y < now_year)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_match_host_path_and_secure_and_can_be_deleted() {
        let mut jar = CookieJar::default();
        jar.store(
            "api.example.com",
            "/login",
            ["sid=abc; Path=/; HttpOnly", "pref=1; Path=/app; Secure"],
        );
        jar.store(
            "api.example.com",
            "/login",
            ["wide=1; Domain=example.com", "evil=1; Domain=other.com"],
        );
        assert_eq!(
            jar.header("api.example.com", "/x", false).as_deref(),
            Some("sid=abc; wide=1")
        );
        assert_eq!(
            jar.header("api.example.com", "/app/1?q", true).as_deref(),
            Some("sid=abc; pref=1; wide=1")
        );
        assert_eq!(jar.header("www.example.com", "/", true).as_deref(), Some("wide=1"));
        assert_eq!(jar.header("other.com", "/", true), None);
        jar.store("api.example.com", "/", ["sid=new; Path=/"]);
        assert_eq!(
            jar.header("api.example.com", "/", false).as_deref(),
            Some("wide=1; sid=new")
        );
        jar.store("api.example.com", "/", ["sid=; Path=/; Max-Age=0"]);
        jar.store(
            "api.example.com",
            "/",
            ["wide=; Domain=example.com; Expires=Thu, 01 Jan 1970 00:00:00 GMT"],
        );
        assert_eq!(jar.header("api.example.com", "/", false), None);
    }
}
