//! A route's id path parameter, parsed once where the request enters.
//!
//! The handler receives the typed id (`paddock_core::ids`), never the text. A text that is
//! not a well-formed id names nothing, so each route answers it as it answers an id it does
//! not know (a 404 of its own wording, or a page's HTML 404): the route says how with a type
//! implementing [`MalformedId`].

use std::marker::PhantomData;
use std::str::FromStr;

use axum::extract::{FromRequestParts, Path};
use axum::response::{IntoResponse, Response};
use http::request::Parts;

/// How a route answers a path id that is not well formed.
pub trait MalformedId<S> {
    /// The answer, from the request's parts and the shared state (a page needs both).
    fn answer(parts: &Parts, state: &S) -> Response;
}

/// The route's one path parameter, an id of type `T`; a malformed one is answered as `A`
/// says, before the handler runs.
pub struct PathId<T, A> {
    /// The parsed id.
    pub id: T,
    answer: PhantomData<fn() -> A>,
}

impl<S, T, A> FromRequestParts<S> for PathId<T, A>
where
    S: Send + Sync,
    T: FromStr,
    A: MalformedId<S>,
{
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Response> {
        // A path that does not read as text is refused as axum's `Path<String>` refuses it,
        // which is what these routes answered before they took a typed id.
        let Path(text) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        match text.parse() {
            Ok(id) => Ok(Self {
                id,
                answer: PhantomData,
            }),
            Err(_) => Err(A::answer(parts, state)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::body::{Body, to_bytes};
    use axum::routing::get;
    use http::{Request, StatusCode};
    use paddock_core::ids::SessionId;
    use tower::ServiceExt;

    struct Teapot;

    impl<S> MalformedId<S> for Teapot {
        fn answer(_: &Parts, _: &S) -> Response {
            (StatusCode::IM_A_TEAPOT, "malformed").into_response()
        }
    }

    async fn get_path(path: &str) -> (StatusCode, String) {
        let app = Router::new().route(
            "/things/{id}",
            get(|PathId { id, .. }: PathId<SessionId, Teapot>| async move { id.to_string() }),
        );
        let answer = app
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = answer.status();
        let body = to_bytes(answer.into_body(), 1 << 10).await.unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn a_well_formed_id_reaches_the_handler_and_a_malformed_one_the_routes_answer() {
        let id = "0190a0b2-3c4d-7e5f-9a0b-1c2d3e4f5a6b";
        assert_eq!(
            get_path(&format!("/things/{id}")).await,
            (StatusCode::OK, id.to_owned())
        );
        for malformed in ["not-an-id", "0190A0B2-3C4D-7E5F-9A0B-1C2D3E4F5A6B", "%20"] {
            assert_eq!(
                get_path(&format!("/things/{malformed}")).await,
                (StatusCode::IM_A_TEAPOT, "malformed".to_owned()),
                "{malformed}"
            );
        }
    }
}
