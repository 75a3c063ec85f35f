//! A group's routes written once and read two ways: served (an axum [`Router`] of the
//! handlers, without their OpenAPI operations) and described (an [`OpenApiRouter`] of the
//! operations, without their handlers).
//!
//! A Lambda function builds its router at start and serves it; `/openapi.json` is built on
//! its first request only. Serving through `utoipa_axum`'s own `routes!` would build every
//! operation and its schemas at start, and link them into every function; describing
//! through it would link every group's handlers into the function that serves the document.
//! Both sides read the same `#[utoipa::path]` of each handler, so an operation is described
//! exactly when its route is served.

use axum::Router;
use axum::routing::MethodRouter;
use utoipa_axum::router::OpenApiRouter;

use crate::state::AppState;

/// Operations that share a path, declared by `operations!`.
pub trait Operations {
    /// Adds the handlers to `router`, each at its path for its methods.
    fn serve(router: Router<AppState>) -> Router<AppState>;
    /// Adds the operations (and the schemas they name) to `router`'s description.
    fn describe(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState>;
}

/// What a group's routes are registered on: [`Router`] to serve them, [`OpenApiRouter`] to
/// describe them.
pub trait Routes: Sized {
    /// No routes yet.
    fn empty() -> Self;
    /// Adds the declared operations.
    fn operations<O: Operations>(self, declared: O) -> Self;
    /// Adds a route that is served but not described (`route` is asked only when serving).
    fn undocumented(self, path: &str, route: impl FnOnce() -> MethodRouter<AppState>) -> Self;
    /// Adds `other`'s routes.
    fn merge(self, other: Self) -> Self;
    /// Bounds the bodies of the routes added so far to `bytes` instead of the service's limit.
    fn body_limit(self, bytes: usize) -> Self;
}

impl Routes for Router<AppState> {
    fn empty() -> Self {
        Router::new()
    }

    fn operations<O: Operations>(self, _declared: O) -> Self {
        O::serve(self)
    }

    fn undocumented(self, path: &str, route: impl FnOnce() -> MethodRouter<AppState>) -> Self {
        self.route(path, route())
    }

    fn merge(self, other: Self) -> Self {
        Router::merge(self, other)
    }

    fn body_limit(self, bytes: usize) -> Self {
        self.layer(axum::extract::DefaultBodyLimit::max(bytes))
    }
}

impl Routes for OpenApiRouter<AppState> {
    fn empty() -> Self {
        OpenApiRouter::default()
    }

    fn operations<O: Operations>(self, _declared: O) -> Self {
        O::describe(self)
    }

    fn undocumented(self, _path: &str, _route: impl FnOnce() -> MethodRouter<AppState>) -> Self {
        self
    }

    fn merge(self, other: Self) -> Self {
        OpenApiRouter::merge(self, other)
    }

    fn body_limit(self, _bytes: usize) -> Self {
        self
    }
}

/// Declares handlers annotated with `#[utoipa::path]` that share a path, as
/// `utoipa_axum::routes!` takes them, for [`Routes::operations`].
///
/// The describing side is `routes!`'s own resolution of each handler's operation, tags and
/// schemas (so the document stays what `routes!` made it), handed to the [`OpenApiRouter`]
/// with a router of no handler; the serving side reads only each handler's path and methods.
#[macro_export]
macro_rules! operations {
    ($($handler:path),+ $(,)?) => {{
        struct Declared;
        impl $crate::registry::Operations for Declared {
            fn serve(
                router: ::axum::Router<$crate::state::AppState>,
            ) -> ::axum::Router<$crate::state::AppState> {
                #[allow(unused_imports)]
                use ::utoipa_axum::PathItemExt as _;
                $(
                    let (path, methods) = ::utoipa_axum::paste! {(
                        ::utoipa_axum::routes!(@path [path()] of $handler),
                        ::utoipa_axum::routes!(@path [methods()] of $handler),
                    )};
                    let method_router = methods.iter().fold(
                        ::axum::routing::MethodRouter::new(),
                        |router, method| router.on(method.to_method_filter(), $handler),
                    );
                    let router = router.route(&path, method_router);
                )+
                router
            }

            fn describe(
                router: ::utoipa_axum::router::OpenApiRouter<$crate::state::AppState>,
            ) -> ::utoipa_axum::router::OpenApiRouter<$crate::state::AppState> {
                let mut paths = ::utoipa::openapi::path::Paths::new();
                let mut schemas = ::std::vec::Vec::<(
                    ::std::string::String,
                    ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema>,
                )>::new();
                $(
                    let (path, item, types) =
                        ::utoipa_axum::routes!(@resolve_types $handler : schemas);
                    paths.add_path_operation(&path, types, item);
                )+
                router.routes((schemas, paths, ::axum::routing::MethodRouter::new()))
            }
        }
        Declared
    }};
}
pub use crate::operations;
