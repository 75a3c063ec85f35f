use super::*;

#[test]
fn a_generated_token_has_the_prefix_the_length_and_a_matching_checksum() {
    let token = generate();
    assert!(token.starts_with(PREFIX));
    assert_eq!(token.len(), TOKEN_LEN);
    assert_eq!(check_form(&token), Ok(()));
    assert_ne!(generate(), token);
}

#[test]
fn a_changed_character_fails_the_checksum_and_other_shapes_are_malformed() {
    let token = generate();
    let mut bytes = token.clone().into_bytes();
    bytes[10] = if bytes[10] == b'a' { b'b' } else { b'a' };
    let typo = String::from_utf8(bytes).unwrap();
    assert_eq!(check_form(&typo), Err(TokenRefused::BadChecksum));
    assert_eq!(check_form("pdk_short"), Err(TokenRefused::Malformed));
    assert_eq!(
        check_form(&token.replacen("pdk_", "pdx_", 1)),
        Err(TokenRefused::Malformed)
    );
    let with_symbol = format!("{}-{}", &token[..20], &token[21..]);
    assert_eq!(check_form(&with_symbol), Err(TokenRefused::Malformed));
}

#[test]
fn a_request_is_checked_field_by_field() {
    let scopes = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    let ok = NewToken::parse(" bot ", &scopes(&["sessions:read", "sessions:read"]), None).unwrap();
    assert_eq!(ok.name, "bot");
    assert_eq!(ok.scopes, vec![Scope::SessionsRead]);
    assert_eq!(ok.expires_in_days, DEFAULT_EXPIRY_DAYS);
    assert!(matches!(
        NewToken::parse("bot", &scopes(&["sessions:delete"]), None),
        Err(TokenError::UnknownScope(s)) if s == "sessions:delete"
    ));
    assert!(matches!(
        NewToken::parse("bot", &scopes(&["sharepacks"]), Some(366)),
        Err(TokenError::BadExpiry)
    ));
    assert!(matches!(
        NewToken::parse("bot", &scopes(&["sharepacks"]), Some(0)),
        Err(TokenError::BadExpiry)
    ));
    assert!(matches!(
        NewToken::parse("", &scopes(&["sharepacks"]), None),
        Err(TokenError::BadName)
    ));
    assert!(matches!(
        NewToken::parse("bot", &[], None),
        Err(TokenError::NoScopes)
    ));
    for scope in Scope::ALL {
        assert_eq!(Scope::parse(scope.name()), Some(scope));
        assert_eq!(serde_json::to_value(scope).unwrap(), scope.name());
    }
}
