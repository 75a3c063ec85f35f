//! The endpoint groups are what is served, described and deployed: every route a group's
//! router serves is an operation of the API description (or one of its few listed
//! undocumented routes), every operation reaches its group's function through the template's
//! routes, and every function of the template has its alarms, its dashboard entries and the
//! policies of what its group needs.

use std::collections::BTreeSet;

use axum::Router;
use axum::body::Body;
use axum::extract::{MatchedPath, Request};
use axum::middleware::{self, Next};
use axum::response::Response;
use http::HeaderValue;
use paddock_api::routes::Group;
use paddock_api::state::AppState;
use paddock_tests::binaries::workspace_root;
use paddock_tests::local_api::routes::RouteTable;
use paddock_tests::local_api::template::Template;
use tower::ServiceExt;

/// Every operation of a group's description, as `(method, path template)`.
fn operations(group: Group) -> BTreeSet<(String, String)> {
    let doc = group.description();
    let doc = serde_json::to_value(doc).unwrap();
    let mut out = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in ["get", "put", "post", "delete", "patch"] {
            if item.get(method).is_some() {
                out.insert((method.to_uppercase(), path.clone()));
            }
        }
    }
    out
}

/// `template` with each `{name}` replaced by a value.
fn concrete(template: &str) -> String {
    template
        .split('/')
        .map(|s| if s.starts_with('{') { "x1" } else { s })
        .collect::<Vec<_>>()
        .join("/")
}

/// Puts the route the request matched in the answer's `x-matched-path` header.
async fn report_match(request: Request, next: Next) -> Response {
    let matched = request
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_owned());
    let mut response = next.run(request).await;
    if let Some(matched) = matched {
        response
            .headers_mut()
            .insert("x-matched-path", HeaderValue::from_str(&matched).unwrap());
    }
    response
}

async fn state() -> AppState {
    let t = paddock_tests::ports(paddock_tests::Backend::Embedded).await;
    AppState::new(t.ports.clone(), t.settings.clone())
}

/// The route of the group's router that `method path` reaches, if any.
async fn matched(router: &Router, method: &str, path: &str) -> Option<String> {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .body(Body::empty())
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    response
        .headers()
        .get("x-matched-path")
        .map(|v| v.to_str().unwrap().to_owned())
}

#[tokio::test]
async fn every_route_a_group_serves_is_an_operation_or_listed_as_undocumented() {
    let state = state().await;
    let mut failures = Vec::new();
    for group in Group::ALL {
        let router: Router = group
            .routes::<Router<AppState>>()
            .layer(middleware::from_fn(report_match))
            .with_state(state.clone());
        let documented = operations(group);
        assert!(!documented.is_empty(), "{group:?} describes operations");
        for (method, path) in &documented {
            let got = matched(&router, method, &concrete(path)).await;
            if got.as_deref() != Some(path.as_str()) {
                failures.push(format!("{group:?}: {method} {path} is routed to {got:?}"));
            }
        }
        for &(method, path) in group.undocumented_routes() {
            if documented.contains(&(method.to_owned(), path.to_owned())) {
                failures.push(format!(
                    "{group:?}: {method} {path} is documented after all"
                ));
            }
            let got = matched(&router, method, &concrete(path)).await;
            if got.as_deref() != Some(path) {
                failures.push(format!("{group:?}: {method} {path} is routed to {got:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[tokio::test]
async fn the_served_description_is_every_groups_operations() {
    let app = paddock_tests::spawn_app().await;
    let doc: serde_json::Value = app.get("/openapi.json").await.json().await.unwrap();
    let mut served = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            served.insert((method.to_uppercase(), path.clone()));
        }
    }
    let groups: BTreeSet<(String, String)> = Group::ALL.into_iter().flat_map(operations).collect();
    assert_eq!(served, groups);
}

fn template() -> (Template, String) {
    let path = workspace_root().join("template.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    (Template::parse(&text).unwrap(), text)
}

/// The lines of resource `logical_id` in the template's text, up to the next resource.
fn resource(text: &str, logical_id: &str) -> Option<String> {
    let header = format!("  {logical_id}:");
    let mut lines = text.lines().skip_while(|l| *l != header);
    let first = lines.next()?;
    let body = lines.take_while(|l| {
        let top_level = !l.starts_with(' ') && !l.is_empty();
        let next_resource =
            l.starts_with("  ") && !l.starts_with("   ") && !l[2..].starts_with('#');
        !top_level && !next_resource
    });
    Some(
        std::iter::once(first)
            .chain(body)
            .collect::<Vec<_>>()
            .join("\n")
            + "\n",
    )
}

#[test]
fn every_operation_reaches_its_groups_function_through_the_template() {
    let (template, _) = template();
    let mut table = RouteTable::default();
    for function in &template.functions {
        for (method, path) in &function.routes {
            table.add(method, path, &function.binary).unwrap();
        }
    }
    let mut failures = Vec::new();
    for group in Group::ALL {
        let binary = format!("paddock-{}", group.name());
        let routes = operations(group).into_iter().chain(
            group
                .undocumented_routes()
                .iter()
                .map(|&(m, p)| (m.to_owned(), p.to_owned())),
        );
        for (method, path) in routes {
            let got = table.select(&method, &concrete(&path)).map(|m| m.function);
            if got.as_deref() != Some(binary.as_str()) {
                failures.push(format!("{method} {path} goes to {got:?}, not {binary}"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn every_function_has_its_alarms_dashboard_entries_and_policies() {
    let (template, text) = template();
    let dashboard = resource(&text, "Dashboard").expect("a Dashboard resource");
    let mut failures = Vec::new();
    let mut groups_seen = BTreeSet::new();
    for function in &template.functions {
        let id = &function.logical_id;
        let stem = id.strip_suffix("Function").unwrap_or(id);
        for kind in ["Errors", "Throttles"] {
            let alarm = format!("{stem}{kind}Alarm");
            match resource(&text, &alarm) {
                Some(body) if body.contains(&format!("Value: !Ref {id}\n")) => {}
                Some(_) => failures.push(format!("{alarm} does not watch {id}")),
                None => failures.push(format!("{id} has no {alarm}")),
            }
            if !dashboard.contains(&format!("${{{alarm}.Arn}}")) {
                failures.push(format!("the dashboard does not show {alarm}"));
            }
        }
        if !dashboard.contains(&format!("\"FunctionName\", \"${{{id}}}\"")) {
            failures.push(format!("the dashboard graphs no metric of {id}"));
        }
        let name = function
            .binary
            .strip_prefix("paddock-")
            .unwrap_or(&function.binary);
        if let Some(group) = Group::named(name) {
            groups_seen.insert(group.name());
            let body = resource(&text, id).unwrap();
            let needs = group.needs();
            // A managed S3 policy, or a statement on the bucket's objects.
            let s3 = [
                "- S3CrudPolicy:",
                "- S3ReadPolicy:",
                "s3:GetObject",
                "s3:PutObject",
            ]
            .iter()
            .any(|p| body.contains(p));
            if needs.blobs != s3 {
                failures.push(format!(
                    "{id}: blobs needed {}, S3 policy {s3}",
                    needs.blobs
                ));
            }
            let secrets = body.contains("- AWSSecretsManagerGetSecretValuePolicy:");
            if needs.secrets != secrets {
                failures.push(format!(
                    "{id}: secrets needed {}, Secrets Manager policy {secrets}",
                    needs.secrets
                ));
            }
            let metrics = ["cloudwatch:GetMetricData", "cloudwatch:ListMetrics"]
                .iter()
                .all(|action| body.contains(action));
            if needs.metrics != metrics {
                failures.push(format!(
                    "{id}: metrics needed {}, CloudWatch read policy {metrics}",
                    needs.metrics
                ));
            }
        }
    }
    let all: BTreeSet<&str> = Group::ALL.into_iter().map(Group::name).collect();
    assert_eq!(
        groups_seen, all,
        "every group is a function of the template"
    );
    assert!(failures.is_empty(), "{failures:#?}");
}
