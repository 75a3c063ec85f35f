//! The named envelope schemas of the API description: one for each kind of answer and one
//! for every failure. Operations refer to them, so that a client generated from the document
//! has one type per answer and one error type, instead of a copy of the envelope for every
//! operation and status.

use std::borrow::Cow;

use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Schema, Type};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use crate::activity::feed::FeedEntry;
use crate::coaching::coach::CoachAnswer;
use crate::driver_data::deletion::DeletionTicket;
use crate::identity::users::User;
use crate::leaderboards::cache::LeaderboardPage;
use crate::leaderboards::submit::SubmitOutcome;
use crate::sessions::{Receipt, SessionDetail, SessionSummary};
use crate::sharepacks::packs::{SharePack, UploadTicket};
use crate::tracks::Track;
use crate::tracks::maps::TrackMap;

use super::activity::{AchievementList, Catalog};
use super::auth::TokenResponse;
use super::auth::email::SetPasswordResponse;
use super::auth::tokens::{LogoutResponse, ValidateResponse};
use super::health::{HealthStatus, ReadyStatus};
use super::leaderboards::{MyStanding, VehicleList};
use super::profile::Profile;
use super::sharepacks::{DeletedPack, PackDetail};

/// A `$ref` to the component schema `name`.
fn reference(name: &str) -> RefOr<Schema> {
    RefOr::Ref(Ref::from_schema_name(name))
}

/// `{"success": true, "data": <data>, "error": null}`.
fn success_envelope(data: &str) -> RefOr<Schema> {
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
fn page(item: &str) -> RefOr<Schema> {
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
pub(crate) struct ErrorEnvelope;

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

/// Declares the envelope schema `$name` of answers whose `data` is the schema of `$data`.
macro_rules! envelope {
    ($(#[$doc:meta])* $name:ident => $data:ty) => {
        $(#[$doc])*
        pub(crate) struct $name;

        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                success_envelope(&<$data as ToSchema>::name())
            }
        }

        impl ToSchema for $name {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }

            fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
                schemas.push((
                    <$data as ToSchema>::name().into_owned(),
                    <$data as PartialSchema>::schema(),
                ));
                <$data as ToSchema>::schemas(schemas);
            }
        }
    };
}

/// Declares the page schema `$page` of `$item` entries and its envelope schema `$name`.
macro_rules! page_envelope {
    ($(#[$doc:meta])* $name:ident => $page:ident of $item:ty) => {
        $(#[$doc])*
        pub(crate) struct $name;

        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                success_envelope(stringify!($page))
            }
        }

        impl ToSchema for $name {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }

            fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
                let item = <$item as ToSchema>::name();
                schemas.push((stringify!($page).to_owned(), page(&item)));
                schemas.push((item.into_owned(), <$item as PartialSchema>::schema()));
                <$item as ToSchema>::schemas(schemas);
            }
        }
    };
}

envelope!(
    /// The service's health.
    HealthEnvelope => HealthStatus
);
envelope!(
    /// Readiness of the backing services.
    ReadyEnvelope => ReadyStatus
);
envelope!(
    /// Tokens issued by a sign-in, a refresh or an exchange.
    TokenEnvelope => TokenResponse
);
envelope!(
    /// A password set.
    SetPasswordEnvelope => SetPasswordResponse
);
envelope!(
    /// A sign-out.
    LogoutEnvelope => LogoutResponse
);
envelope!(
    /// A valid token's owner.
    ValidateEnvelope => ValidateResponse
);
envelope!(
    /// A session upload's receipt.
    ReceiptEnvelope => Receipt
);
page_envelope!(
    /// One page of the caller's sessions.
    SessionListEnvelope => SessionList of SessionSummary
);
envelope!(
    /// One session with its laps.
    SessionEnvelope => SessionDetail
);
page_envelope!(
    /// One page of tracks.
    TrackListEnvelope => TrackList of Track
);
envelope!(
    /// A track's centreline map.
    TrackMapEnvelope => TrackMap
);
envelope!(
    /// One page of a leaderboard.
    LeaderboardEnvelope => LeaderboardPage
);
envelope!(
    /// The caller's standing on a board.
    StandingEnvelope => MyStanding
);
envelope!(
    /// The cars of a track's boards.
    VehicleListEnvelope => VehicleList
);
envelope!(
    /// The outcome of a lap submission.
    SubmitOutcomeEnvelope => SubmitOutcome
);
page_envelope!(
    /// One page of the caller's feed.
    FeedListEnvelope => FeedList of FeedEntry
);
envelope!(
    /// A feed entry posted.
    FeedEntryEnvelope => FeedEntry
);
envelope!(
    /// The caller's achievements.
    AchievementListEnvelope => AchievementList
);
envelope!(
    /// The achievement catalog.
    CatalogEnvelope => Catalog
);
envelope!(
    /// A coaching answer.
    CoachAnswerEnvelope => CoachAnswer
);
envelope!(
    /// A share pack.
    SharePackEnvelope => SharePack
);
page_envelope!(
    /// One page of the caller's share packs.
    SharePackListEnvelope => SharePackList of SharePack
);
envelope!(
    /// A share pack's details.
    PackDetailEnvelope => PackDetail
);
envelope!(
    /// Where to upload a pack's bytes.
    UploadTicketEnvelope => UploadTicket
);
envelope!(
    /// A share pack deleted.
    DeletedPackEnvelope => DeletedPack
);
envelope!(
    /// A driver's public profile.
    ProfileEnvelope => Profile
);
envelope!(
    /// The caller's own profile.
    UserEnvelope => User
);
envelope!(
    /// An account deletion under way.
    DeletionTicketEnvelope => DeletionTicket
);
