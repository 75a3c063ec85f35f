//! `/v1/leagues`: a driver's leagues, joined by invite code (see docs/api-guide.md, Leagues).
//! A league is seen by its members only: anyone else is answered 404, as for another driver's
//! session; a member asking for what only the owner may do is answered 403.

use crate::routes::registry::{Routes, operations};
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use http::request::Parts;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::envelopes::envelope;
use crate::http::auth_user::{Caller, scope};
use crate::http::envelope::with_status;
use crate::http::{ApiError, ApiJson, MalformedId, PathId, ok};
use crate::state::AppState;
use paddock_core::ids::{LeagueId, UserId};
use paddock_core::leagues::{self, Labels, League, LeagueError, Member, parse_code};

/// The league routes.
pub(crate) fn routes<R: Routes>() -> R {
    R::empty()
        .operations(operations!(list, create))
        .operations(operations!(read))
        .operations(operations!(join))
        .operations(operations!(rotate_code))
        .operations(operations!(members))
        .operations(operations!(remove_member))
        .operations(operations!(leave))
        .operations(operations!(transfer))
}

fn league_not_found() -> ApiError {
    LeagueError::NotFound.into()
}

/// A malformed league id names no league: answered as an unknown one.
pub(crate) struct NoSuchLeague;

impl<S> MalformedId<S> for NoSuchLeague {
    fn answer(_: &Parts, _: &S) -> Response {
        league_not_found().into_response()
    }
}

/// `POST /v1/leagues` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateLeagueRequest {
    /// 1 to 60 characters (trimmed); no control, invisible or text-direction characters.
    #[schema(required = true, value_type = String, min_length = 1, max_length = 60)]
    pub name: Option<String>,
    /// At most 500 characters, the same rule.
    #[schema(value_type = Option<String>, max_length = 500)]
    pub description: Option<String>,
}

/// Makes a league; the caller owns it, and its invite code is in the answer.
#[utoipa::path(post, path = "/v1/leagues", operation_id = "createLeague", tag = "leagues",
    security(("bearer" = ["leagues"])),
    request_body(content = CreateLeagueRequest, description = "camelCase or PascalCase names", example = json!({
        "name": "Tuesday Hotlaps", "description": "One track a week, GT3 only"})),
    responses((status = 201, description = "The league, with its invite code", body = LeagueEnvelope),
              (status = 400, description = "A name or description that breaks its rule (the error names the field)"),
              (status = 401, description = "No valid sign-in"),
              (status = 409, description = "The caller owns 5 leagues, or belongs to 20")))]
pub(crate) async fn create(
    State(state): State<AppState>,
    user: Caller<scope::Leagues>,
    ApiJson(body): ApiJson<CreateLeagueRequest>,
) -> Result<Response, ApiError> {
    let labels = Labels::parse(body.name, body.description)?;
    let league = leagues::create(&state.ports, user.user_id(), labels).await?;
    Ok(with_status(StatusCode::CREATED, league))
}

/// The caller's leagues.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct LeagueList {
    /// Oldest first (at most 20).
    pub items: Vec<League>,
}

/// The leagues the caller belongs to.
#[utoipa::path(get, path = "/v1/leagues", operation_id = "listLeagues", tag = "leagues",
    security(("bearer" = ["leagues"])),
    responses((status = 200, description = "Every league of the caller, oldest first", body = LeagueListEnvelope),
              (status = 401, description = "No valid sign-in")))]
pub(crate) async fn list(
    State(state): State<AppState>,
    user: Caller<scope::Leagues>,
) -> Result<Response, ApiError> {
    let items = leagues::list(&state.ports, user.user_id()).await?;
    Ok(ok(LeagueList { items }))
}

/// One of the caller's leagues.
#[utoipa::path(get, path = "/v1/leagues/{id}", operation_id = "getLeague", tag = "leagues",
    security(("bearer" = ["leagues"])),
    params(("id" = String, Path, description = "The league's id")),
    responses((status = 200, description = "The league (its invite code only for the owner)", body = LeagueEnvelope),
              (status = 401, description = "No valid sign-in"),
              (status = 404, description = "No such league, or the caller is not in it")))]
pub(crate) async fn read(
    State(state): State<AppState>,
    user: Caller<scope::Leagues>,
    PathId { id, .. }: PathId<LeagueId, NoSuchLeague>,
) -> Result<Response, ApiError> {
    Ok(ok(leagues::get(&state.ports, user.user_id(), &id).await?))
}

/// `POST /v1/leagues/join` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct JoinLeagueRequest {
    /// The league's current invite code (22 letters, digits, `-` or `_`).
    #[schema(required = true, value_type = String, min_length = 22, max_length = 22, pattern = "^[A-Za-z0-9_-]{22}$")]
    pub code: Option<String>,
}

/// Joins the league whose current invite code this is. Joining a league the caller is
/// already in changes nothing and answers 200.
#[utoipa::path(post, path = "/v1/leagues/join", operation_id = "joinLeague", tag = "leagues",
    security(("bearer" = ["leagues"])),
    request_body(content = JoinLeagueRequest, description = "camelCase or PascalCase names", example = json!({
        "code": "q3Vd0sRk1x9P2mZtYw7b4A"})),
    responses((status = 201, description = "Joined: the league", body = LeagueEnvelope),
              (status = 200, description = "Already a member: the league, unchanged", body = LeagueEnvelope),
              (status = 400, description = "A code that is not of an invite code's form"),
              (status = 401, description = "No valid sign-in"),
              (status = 404, description = "No league has this invite code (wrong, or rotated since)"),
              (status = 409, description = "The league has 50 members, or the caller belongs to 20 leagues")))]
pub(crate) async fn join(
    State(state): State<AppState>,
    user: Caller<scope::Leagues>,
    ApiJson(body): ApiJson<JoinLeagueRequest>,
) -> Result<Response, ApiError> {
    let code = parse_code(body.code)?;
    let joined =
        paddock_core::competition_events::join(&state.ports, user.user_id(), &code).await?;
    let status = if joined.new {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(with_status(status, joined.league))
}

/// Gives the league a new invite code: the old one stops working at once. Owner only.
#[utoipa::path(post, path = "/v1/leagues/{id}/invite-code", operation_id = "rotateLeagueInviteCode", tag = "leagues",
    security(("bearer" = ["leagues"])),
    params(("id" = String, Path, description = "The league's id")),
    responses((status = 200, description = "The league with its new invite code", body = LeagueEnvelope),
              (status = 401, description = "No valid sign-in"),
              (status = 403, description = "The caller is a member, not the owner"),
              (status = 404, description = "No such league, or the caller is not in it")))]
pub(crate) async fn rotate_code(
    State(state): State<AppState>,
    user: Caller<scope::Leagues>,
    PathId { id, .. }: PathId<LeagueId, NoSuchLeague>,
) -> Result<Response, ApiError> {
    Ok(ok(
        leagues::rotate_code(&state.ports, user.user_id(), &id).await?
    ))
}

/// A league's members.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct MemberList {
    /// In the order they joined (at most 50).
    pub items: Vec<Member>,
}

/// The members of one of the caller's leagues.
#[utoipa::path(get, path = "/v1/leagues/{id}/members", operation_id = "listLeagueMembers", tag = "leagues",
    security(("bearer" = ["leagues"])),
    params(("id" = String, Path, description = "The league's id")),
    responses((status = 200, description = "Every member, in the order they joined", body = MemberListEnvelope),
              (status = 401, description = "No valid sign-in"),
              (status = 404, description = "No such league, or the caller is not in it")))]
pub(crate) async fn members(
    State(state): State<AppState>,
    user: Caller<scope::Leagues>,
    PathId { id, .. }: PathId<LeagueId, NoSuchLeague>,
) -> Result<Response, ApiError> {
    let items = leagues::members(&state.ports, user.user_id(), &id).await?;
    Ok(ok(MemberList { items }))
}

/// A league id and a member's id from the path; a malformed one names nothing.
fn league_and_member((league, member): (String, String)) -> Result<(LeagueId, UserId), ApiError> {
    let league = league.parse().map_err(|_| league_not_found())?;
    let member = member
        .parse()
        .map_err(|_| ApiError::from(LeagueError::NotAMember))?;
    Ok((league, member))
}

/// Takes a member out of the league. Owner only; the owner leaves instead.
#[utoipa::path(delete, path = "/v1/leagues/{id}/members/{userId}", operation_id = "removeLeagueMember", tag = "leagues",
    security(("bearer" = ["leagues"])),
    params(("id" = String, Path, description = "The league's id"),
           ("userId" = String, Path, description = "The member's user id")),
    responses((status = 204, description = "Removed"),
              (status = 400, description = "The owner named themselves"),
              (status = 401, description = "No valid sign-in"),
              (status = 403, description = "The caller is a member, not the owner"),
              (status = 404, description = "No such league (or the caller is not in it), or no such member")))]
pub(crate) async fn remove_member(
    State(state): State<AppState>,
    user: Caller<scope::Leagues>,
    Path(ids): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let (id, member) = league_and_member(ids)?;
    leagues::remove_member(&state.ports, user.user_id(), &id, &member).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// What became of a league the caller left.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LeftLeague {
    /// `member` (the league goes on), `handedOn` (the caller owned it: it passed to its
    /// longest-standing member) or `closed` (the caller owned it alone: it is gone).
    #[schema(pattern = "^(member|handedOn|closed)$")]
    pub outcome: String,
    /// The new owner, when it was handed on.
    #[schema(value_type = Option<String>, format = Uuid)]
    pub new_owner_id: Option<UserId>,
}

/// Leaves one of the caller's leagues. An owner's league passes to its longest-standing
/// member, or closes when the owner was alone in it.
#[utoipa::path(post, path = "/v1/leagues/{id}/leave", operation_id = "leaveLeague", tag = "leagues",
    security(("bearer" = ["leagues"])),
    params(("id" = String, Path, description = "The league's id")),
    responses((status = 200, description = "Left, and what became of the league", body = LeftLeagueEnvelope),
              (status = 401, description = "No valid sign-in"),
              (status = 404, description = "No such league, or the caller is not in it")))]
pub(crate) async fn leave(
    State(state): State<AppState>,
    user: Caller<scope::Leagues>,
    PathId { id, .. }: PathId<LeagueId, NoSuchLeague>,
) -> Result<Response, ApiError> {
    let left = leagues::leave(&state.ports, user.user_id(), &id).await?;
    let (outcome, new_owner_id) = match left {
        leagues::Left::Member => ("member", None),
        leagues::Left::HandedTo(heir) => ("handedOn", Some(heir)),
        leagues::Left::Closed => ("closed", None),
    };
    let outcome = outcome.to_owned();
    Ok(ok(LeftLeague {
        outcome,
        new_owner_id,
    }))
}

/// `POST /v1/leagues/{id}/owner` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TransferLeagueRequest {
    /// The member who becomes the owner.
    #[schema(required = true, value_type = String, format = Uuid)]
    pub user_id: Option<String>,
}

/// Hands the league to one of its members. Owner only; the caller stays a member.
#[utoipa::path(post, path = "/v1/leagues/{id}/owner", operation_id = "transferLeague", tag = "leagues",
    security(("bearer" = ["leagues"])),
    params(("id" = String, Path, description = "The league's id")),
    request_body(content = TransferLeagueRequest, description = "camelCase or PascalCase names", example = json!({
        "userId": "0190a0b2-3c4d-4e5f-9a0b-1c2d3e4f5a6b"})),
    responses((status = 200, description = "The league, now owned by that member", body = LeagueEnvelope),
              (status = 400, description = "No userId, a malformed one, or the owner's own"),
              (status = 401, description = "No valid sign-in"),
              (status = 403, description = "The caller is a member, not the owner"),
              (status = 404, description = "No such league (or the caller is not in it), or that driver is not a member"),
              (status = 409, description = "That member owns 5 leagues already")))]
pub(crate) async fn transfer(
    State(state): State<AppState>,
    user: Caller<scope::Leagues>,
    PathId { id, .. }: PathId<LeagueId, NoSuchLeague>,
    ApiJson(body): ApiJson<TransferLeagueRequest>,
) -> Result<Response, ApiError> {
    let heir = body
        .user_id
        .ok_or_else(|| ApiError::invalid("userId", "is required"))?
        .parse::<UserId>()
        .map_err(|_| ApiError::invalid("userId", "must be a user id"))?;
    Ok(ok(leagues::transfer(
        &state.ports,
        user.user_id(),
        &id,
        &heir,
    )
    .await?))
}

envelope!(
    /// One league.
    LeagueEnvelope => League
);

envelope!(
    /// The caller's leagues.
    LeagueListEnvelope => LeagueList
);

envelope!(
    /// A league's members.
    MemberListEnvelope => MemberList
);

envelope!(
    /// What became of a league left.
    LeftLeagueEnvelope => LeftLeague
);
