//! Route selection as API Gateway HTTP APIs do it.
//!
//! A route is a method (or `ANY`) and a path of literal segments, `{name}` segments (one
//! segment each) and at most one trailing `{name+}` (one segment or more). For a request,
//! API Gateway picks the most specific route: a route without a greedy variable before one
//! with it, then, segment by segment from the left, a literal before a variable, then the
//! longer path, then a route of the request's own method before an `ANY` route; the
//! `$default` route takes what nothing else matches, and without it the answer is 404
//! `{"message":"Not Found"}`.

use std::cmp::Ordering;
use std::collections::BTreeMap;

/// One segment of a route's path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    /// `{name}`: one segment.
    Variable(String),
    /// `{name+}`: the rest of the path, at least one segment.
    Greedy(String),
}

/// A route and the function it belongs to.
#[derive(Debug, Clone)]
struct Route {
    /// `METHOD /path` as written in the template (the event's `routeKey`).
    key: String,
    method: String,
    segments: Vec<Segment>,
    function: String,
}

/// The routes of one HTTP API.
#[derive(Debug, Clone, Default)]
pub struct RouteTable {
    routes: Vec<Route>,
    default: Option<(String, String)>,
}

/// The route a request went to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched {
    /// The event's `routeKey` (`ANY /v1/auth/{proxy+}`, `$default`).
    pub route_key: String,
    /// The function's binary.
    pub function: String,
    /// The path variables, decoded as API Gateway hands them over (percent-escapes kept).
    pub path_parameters: BTreeMap<String, String>,
}

impl RouteTable {
    /// Adds `method path` of `function`; `path` `$default` makes it the catch-all route.
    pub fn add(&mut self, method: &str, path: &str, function: &str) -> anyhow::Result<()> {
        if path == "$default" {
            self.default = Some(("$default".to_owned(), function.to_owned()));
            return Ok(());
        }
        let segments = parse_path(path)?;
        self.routes.push(Route {
            key: format!("{} {path}", method.to_ascii_uppercase()),
            method: method.to_ascii_uppercase(),
            segments,
            function: function.to_owned(),
        });
        Ok(())
    }

    /// Every route key and its function, `$default` included.
    pub fn routes(&self) -> Vec<(String, String)> {
        self.routes
            .iter()
            .map(|r| (r.key.clone(), r.function.clone()))
            .chain(self.default.clone())
            .collect()
    }

    /// The route of a request of `method` to `path` (no query string), if any.
    pub fn select(&self, method: &str, path: &str) -> Option<Matched> {
        let parts: Vec<&str> = path.strip_prefix('/').unwrap_or(path).split('/').collect();
        let best = self
            .routes
            .iter()
            .filter(|r| r.method == "ANY" || r.method.eq_ignore_ascii_case(method))
            .filter_map(|r| bind(&r.segments, &parts).map(|params| (r, params)))
            .min_by(|(a, _), (b, _)| specificity(a, b, method));
        match best {
            Some((route, path_parameters)) => Some(Matched {
                route_key: route.key.clone(),
                function: route.function.clone(),
                path_parameters,
            }),
            None => self.default.as_ref().map(|(key, function)| Matched {
                route_key: key.clone(),
                function: function.clone(),
                path_parameters: BTreeMap::new(),
            }),
        }
    }
}

fn parse_path(path: &str) -> anyhow::Result<Vec<Segment>> {
    let Some(rest) = path.strip_prefix('/') else {
        anyhow::bail!("route path {path:?} does not start with /");
    };
    let parts: Vec<&str> = rest.split('/').collect();
    let mut segments = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let segment = match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
            Some(name) => match name.strip_suffix('+') {
                Some(name) if i + 1 == parts.len() => Segment::Greedy(name.to_owned()),
                Some(_) => anyhow::bail!("route path {path:?}: a greedy variable must come last"),
                None => Segment::Variable(name.to_owned()),
            },
            None => Segment::Literal((*part).to_owned()),
        };
        segments.push(segment);
    }
    Ok(segments)
}

/// The path variables when `segments` match `parts`.
fn bind(segments: &[Segment], parts: &[&str]) -> Option<BTreeMap<String, String>> {
    let mut params = BTreeMap::new();
    for (i, segment) in segments.iter().enumerate() {
        match segment {
            Segment::Literal(literal) => {
                if parts.get(i) != Some(&literal.as_str()) {
                    return None;
                }
            }
            Segment::Variable(name) => {
                let part = parts.get(i).filter(|p| !p.is_empty())?;
                params.insert(name.clone(), (*part).to_owned());
            }
            Segment::Greedy(name) => {
                let rest = parts.get(i..).filter(|r| !r.is_empty())?.join("/");
                if rest.is_empty() {
                    return None;
                }
                params.insert(name.clone(), rest);
                return Some(params);
            }
        }
    }
    (segments.len() == parts.len()).then_some(params)
}

/// `Less` when `a` is the more specific of two routes matching a request of `method`.
fn specificity(a: &Route, b: &Route, method: &str) -> Ordering {
    let greedy = |r: &Route| matches!(r.segments.last(), Some(Segment::Greedy(_)));
    let rank = |s: &Segment| match s {
        Segment::Literal(_) => 0,
        Segment::Variable(_) => 1,
        Segment::Greedy(_) => 2,
    };
    let any = |r: &Route| !r.method.eq_ignore_ascii_case(method);
    greedy(a)
        .cmp(&greedy(b))
        .then_with(|| {
            a.segments
                .iter()
                .zip(&b.segments)
                .map(|(x, y)| rank(x).cmp(&rank(y)))
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        })
        .then_with(|| b.segments.len().cmp(&a.segments.len()))
        .then_with(|| any(a).cmp(&any(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(routes: &[(&str, &str, &str)]) -> RouteTable {
        let mut t = RouteTable::default();
        for (method, path, function) in routes {
            t.add(method, path, function).unwrap();
        }
        t
    }

    fn to(t: &RouteTable, method: &str, path: &str) -> Option<(String, String)> {
        t.select(method, path).map(|m| (m.function, m.route_key))
    }

    #[test]
    fn an_exact_route_beats_a_greedy_one_and_greedy_needs_a_segment() {
        let t = table(&[
            ("ANY", "/v1/sessions", "sessions"),
            ("ANY", "/v1/sessions/{proxy+}", "sessions-proxy"),
            ("ANY", "/v1/auth/{proxy+}", "auth"),
        ]);
        assert_eq!(to(&t, "GET", "/v1/sessions").unwrap().0, "sessions");
        assert_eq!(
            to(&t, "POST", "/v1/sessions/abc/laps").unwrap().0,
            "sessions-proxy"
        );
        assert_eq!(
            t.select("POST", "/v1/auth/login/oidc")
                .unwrap()
                .path_parameters["proxy"],
            "login/oidc"
        );
        assert_eq!(
            to(&t, "GET", "/v1/auth"),
            None,
            "a greedy variable needs one segment"
        );
        assert_eq!(to(&t, "GET", "/v1/auth/"), None);
        assert_eq!(to(&t, "GET", "/v1/sessionsx"), None);
    }

    #[test]
    fn literals_beat_variables_and_methods_beat_any() {
        let t = table(&[
            ("GET", "/boards/{trackId}", "by-id"),
            ("GET", "/boards/top", "top"),
            ("ANY", "/boards/{proxy+}", "greedy"),
            ("ANY", "/things/{id}", "any"),
            ("DELETE", "/things/{id}", "delete"),
        ]);
        assert_eq!(to(&t, "GET", "/boards/top").unwrap().0, "top");
        let by_id = t.select("GET", "/boards/monza").unwrap();
        assert_eq!(by_id.function, "by-id");
        assert_eq!(by_id.route_key, "GET /boards/{trackId}");
        assert_eq!(by_id.path_parameters["trackId"], "monza");
        assert_eq!(
            to(&t, "POST", "/boards/monza").unwrap().0,
            "greedy",
            "GET routes take GET only"
        );
        assert_eq!(to(&t, "GET", "/boards/monza/cars").unwrap().0, "greedy");
        assert_eq!(to(&t, "DELETE", "/things/1").unwrap().0, "delete");
        assert_eq!(to(&t, "PUT", "/things/1").unwrap().0, "any");
        assert_eq!(
            to(&t, "GET", "/things/"),
            None,
            "a variable needs a non-empty segment"
        );
    }

    #[test]
    fn default_takes_the_rest_and_bad_paths_are_refused() {
        let mut t = table(&[("GET", "/health", "health")]);
        assert_eq!(to(&t, "POST", "/health"), None);
        t.add("ANY", "$default", "fallback").unwrap();
        assert_eq!(
            to(&t, "POST", "/health"),
            Some(("fallback".into(), "$default".into()))
        );
        assert_eq!(to(&t, "GET", "/nope").unwrap().0, "fallback");
        assert!(t.add("GET", "/a/{rest+}/b", "x").is_err());
        assert!(t.add("GET", "no-slash", "x").is_err());
    }
}
