//! The schemas of a share pack's bodies that are not JSON: the ZIP's bytes and the direct
//! upload's form.

use paddock_http::schemas::binary;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::{PartialSchema, ToSchema};

/// A ZIP's bytes as a body of their own (not JSON).
pub(crate) struct ZipBytes;

impl PartialSchema for ZipBytes {
    fn schema() -> RefOr<Schema> {
        binary().description(Some("The ZIP's bytes.")).into()
    }
}

impl ToSchema for ZipBytes {}

/// The `multipart/form-data` form of a direct upload: `file`, `name` and `description`.
pub(crate) struct PackForm;

impl PartialSchema for PackForm {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .property("file", binary().description(Some("The ZIP.")))
            .property(
                "name",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .description(Some("1 to 100 characters; the download's file name.")),
            )
            .property(
                "description",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .description(Some("At most 1,000 characters.")),
            )
            .required("file")
            .required("name")
            .into()
    }
}

impl ToSchema for PackForm {}
