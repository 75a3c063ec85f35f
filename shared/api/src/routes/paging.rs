//! List paging, as every list endpoint takes and answers it: `limit` (default 20, at most 100) and an opaque `cursor`, answered as
//! `{"items": [...], "nextCursor": string|null}`.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::http::ApiError;

/// Default page size.
pub(crate) const DEFAULT_LIMIT: usize = 20;
/// Largest page size.
pub(crate) const MAX_LIMIT: usize = 100;

/// The paging query parameters of a list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// Page size, 1 to 100 (default 20).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// The `nextCursor` of the previous page.
    pub cursor: Option<String>,
}

impl PageParams {
    /// The page size, or a 400 naming `limit`.
    pub fn limit(&self) -> Result<usize, ApiError> {
        parse_limit(self.limit.as_deref())
    }

    /// The cursor, with an empty one treated as absent.
    pub fn cursor(&self) -> Option<String> {
        self.cursor.clone().filter(|c| !c.is_empty())
    }
}

/// Parses a `limit` parameter.
pub fn parse_limit(raw: Option<&str>) -> Result<usize, ApiError> {
    // An absent limit is the default; a present one must be a number (`limit=` is not).
    match raw.map(str::trim) {
        None => Ok(DEFAULT_LIMIT),
        Some(s) => match s.parse::<usize>() {
            Ok(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
            _ => Err(ApiError::invalid(
                "limit",
                &format!("must be a whole number from 1 to {MAX_LIMIT}"),
            )),
        },
    }
}

/// One page of a list.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Paged<T> {
    /// The entries of this page.
    pub items: Vec<T>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}
