//! The named envelope schemas of the API description: `ErrorEnvelope` for every failure, and
//! the macros with which each endpoint group declares one envelope schema per kind of answer.
//! Operations refer to them, so that a client generated from the document has one type per
//! answer and one error type, instead of a copy of the envelope for every operation and status.

use std::borrow::Cow;

use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Schema, Type};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

/// A `$ref` to the component schema `name`.
fn reference(name: &str) -> RefOr<Schema> {
    RefOr::Ref(Ref::from_schema_name(name))
}

/// `{"success": true, "data": <data>, "error": null}`.
pub fn success_envelope(data: &str) -> RefOr<Schema> {
    ObjectBuilder::new()
        .description(Some(format!(
            "A successful answer: `data` is the {data}, `error` is null."
        )))
        .property(
            "success",
            ObjectBuilder::new()
                .schema_type(Type::Boolean)
                .description(Some("True: the request succeeded.")),
        )
        .property("data", reference(data))
        .property(
            "error",
            ObjectBuilder::new()
                .schema_type(Type::Null)
                .description(Some("Null on success.")),
        )
        .required("success")
        .required("data")
        .required("error")
        .into()
}

/// `{"items": [<item>], "nextCursor": string|null}`.
pub fn page(item: &str) -> RefOr<Schema> {
    ObjectBuilder::new()
        .description(Some(format!("One page of {item} entries.")))
        .property(
            "items",
            ArrayBuilder::new()
                .items(reference(item))
                .description(Some("The entries of this page.")),
        )
        .property(
            "nextCursor",
            ObjectBuilder::new()
                .schema_type(utoipa::openapi::schema::SchemaType::from_iter([
                    Type::String,
                    Type::Null,
                ]))
                .description(Some(
                    "Pass as `cursor` for the next page; null on the last page.",
                )),
        )
        .required("items")
        .required("nextCursor")
        .into()
}

/// Every failure: `{"success": false, "data": null, "error": "<message>"}`.
pub struct ErrorEnvelope;

impl PartialSchema for ErrorEnvelope {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .description(Some(
                "A refused or failed request: `error` says why, `data` is null.",
            ))
            .property(
                "success",
                ObjectBuilder::new()
                    .schema_type(Type::Boolean)
                    .description(Some("False: the request failed.")),
            )
            .property(
                "data",
                ObjectBuilder::new()
                    .schema_type(Type::Null)
                    .description(Some("Null on failure.")),
            )
            .property(
                "error",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .description(Some(
                        "What went wrong, naming the field and the rule where one is broken.",
                    )),
            )
            .required("success")
            .required("data")
            .required("error")
            .into()
    }
}

impl ToSchema for ErrorEnvelope {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("ErrorEnvelope")
    }
}

/// Declares the envelope schema `$name` of answers whose `data` is the schema of `$data`
/// (registered beside it).
#[macro_export]
macro_rules! envelope {
    ($(#[$doc:meta])* $name:ident => $data:ty) => {
        $(#[$doc])*
        pub(crate) struct $name;

        impl ::utoipa::PartialSchema for $name {
            fn schema() -> ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema> {
                $crate::envelope_schemas::success_envelope(&<$data as ::utoipa::ToSchema>::name())
            }
        }

        impl ::utoipa::ToSchema for $name {
            fn name() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(stringify!($name))
            }

            fn schemas(
                schemas: &mut Vec<(String, ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema>)>,
            ) {
                schemas.push((
                    <$data as ::utoipa::ToSchema>::name().into_owned(),
                    <$data as ::utoipa::PartialSchema>::schema(),
                ));
                <$data as ::utoipa::ToSchema>::schemas(schemas);
            }
        }
    };
}

/// Declares the envelope schema `$name` of answers whose `data` is `$page`, a page of `$item`
/// entries (both registered beside it).
#[macro_export]
macro_rules! page_envelope {
    ($(#[$doc:meta])* $name:ident => $page:ident of $item:ty) => {
        $(#[$doc])*
        pub(crate) struct $name;

        impl ::utoipa::PartialSchema for $name {
            fn schema() -> ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema> {
                $crate::envelope_schemas::success_envelope(stringify!($page))
            }
        }

        impl ::utoipa::ToSchema for $name {
            fn name() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(stringify!($name))
            }

            fn schemas(
                schemas: &mut Vec<(String, ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema>)>,
            ) {
                let item = <$item as ::utoipa::ToSchema>::name();
                schemas.push((
                    stringify!($page).to_owned(),
                    $crate::envelope_schemas::page(&item),
                ));
                schemas.push((item.into_owned(), <$item as ::utoipa::PartialSchema>::schema()));
                <$item as ::utoipa::ToSchema>::schemas(schemas);
            }
        }
    };
}
