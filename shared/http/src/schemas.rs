//! Schemas the API description needs that no Rust type derives: bodies that are not JSON.

use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};

/// `{"type": "string", "format": "binary"}`: what client generators read as a file.
pub fn binary() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
}
