//! A field as the client sent it: absent (or null), a value of the expected JSON type, or a
//! value of another type.
//!
//! serde stops at the first value of a wrong type, while one 400 names every problem of an
//! upload (`gameId: must be a string; laps[2].isValid: must be true or false`). A field read
//! as [`Sent`] takes any JSON value, so the upload deserializes whatever its fields hold and
//! the check that follows names each wrong one. Only malformed JSON still stops the reading.
//!
//! Hand-written because the validation crates (`garde`, `validator`) check a value serde has
//! already read, so a wrong type never reaches them: the desktop client's developers see every
//! problem of an upload in one answer instead of one per attempt.

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::marker::PhantomData;

/// A field as sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Sent<T> {
    /// Not sent, or `null`.
    Absent,
    /// A JSON value of another type than `T` reads from.
    Wrong,
    /// A value read as `T`.
    Given(T),
}

/// What a JSON value of each type reads as; `None` for the types `T` does not read from.
/// Every method has a default of `None`, so a kind states only the types it takes.
pub trait Kind<'de>: Sized {
    /// A JSON string.
    fn from_str(_: &str) -> Option<Self> {
        None
    }
    /// A JSON number without a fraction or exponent, negative.
    fn from_i64(_: i64) -> Option<Self> {
        None
    }
    /// A JSON number without a fraction or exponent, from 0.
    fn from_u64(_: u64) -> Option<Self> {
        None
    }
    /// Any other JSON number.
    fn from_f64(_: f64) -> Option<Self> {
        None
    }
    /// `true` or `false`.
    fn from_bool(_: bool) -> Option<Self> {
        None
    }
    /// A JSON array, read to its end.
    fn from_seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Option<Self>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    /// A JSON object, read to its end.
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Option<Self>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

impl Kind<'_> for String {
    fn from_str(v: &str) -> Option<Self> {
        Some(v.to_owned())
    }
}

impl Kind<'_> for bool {
    fn from_bool(v: bool) -> Option<Self> {
        Some(v)
    }
}

/// A whole number, as JSON Schema's `integer` means it: `5` and `5.0` alike.
impl Kind<'_> for i64 {
    fn from_i64(v: i64) -> Option<Self> {
        Some(v)
    }
    fn from_u64(v: u64) -> Option<Self> {
        i64::try_from(v).ok()
    }
    fn from_f64(v: f64) -> Option<Self> {
        // Within ±2^53 a float holds whole numbers exactly.
        (v.fract() == 0.0 && v.abs() <= 9_007_199_254_740_992.0).then_some(v as i64)
    }
}

impl Kind<'_> for f64 {
    fn from_i64(v: i64) -> Option<Self> {
        Some(v as f64)
    }
    fn from_u64(v: u64) -> Option<Self> {
        Some(v as f64)
    }
    fn from_f64(v: f64) -> Option<Self> {
        Some(v)
    }
}

/// A list whose elements are each read as sent, so a wrong one is named by its index.
impl<'de, T: Kind<'de>> Kind<'de> for Vec<Sent<T>> {
    fn from_seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Option<Self>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(item) = seq.next_element::<Sent<T>>()? {
            items.push(item);
        }
        Ok(Some(items))
    }
}

/// The [`Kind::from_map`] of an object type: its derived `Deserialize` (whose fields are
/// [`Sent`] in turn, so it reads whatever they hold).
pub fn object<'de, T: Deserialize<'de>, A: MapAccess<'de>>(map: A) -> Result<Option<T>, A::Error> {
    T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Some)
}

impl<'de, T: Kind<'de>> Deserialize<'de> for Sent<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Through `deserialize_option`, a field missing from its object reads as `None`
        // (serde's derive hands a missing field to it) as `null` does.
        deserializer.deserialize_option(Optional(PhantomData))
    }
}

/// Reads `null` or absence as [`Sent::Absent`], anything else by [`AnyValue`].
struct Optional<T>(PhantomData<T>);

impl<'de, T: Kind<'de>> Visitor<'de> for Optional<T> {
    type Value = Sent<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_none<E: de::Error>(self) -> Result<Sent<T>, E> {
        Ok(Sent::Absent)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Sent<T>, E> {
        Ok(Sent::Absent)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Sent<T>, D::Error> {
        d.deserialize_any(AnyValue(PhantomData))
    }
}

/// Reads any JSON value as [`Sent::Given`] when `T` reads from its type, else as
/// [`Sent::Wrong`].
struct AnyValue<T>(PhantomData<T>);

fn given<T>(value: Option<T>) -> Sent<T> {
    value.map_or(Sent::Wrong, Sent::Given)
}

impl<'de, T: Kind<'de>> Visitor<'de> for AnyValue<T> {
    type Value = Sent<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Sent<T>, E> {
        Ok(Sent::Absent)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Sent<T>, E> {
        Ok(given(T::from_bool(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Sent<T>, E> {
        Ok(given(T::from_i64(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Sent<T>, E> {
        Ok(given(T::from_u64(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Sent<T>, E> {
        Ok(given(T::from_f64(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Sent<T>, E> {
        Ok(given(T::from_str(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Sent<T>, A::Error> {
        T::from_seq(seq).map(given)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Sent<T>, A::Error> {
        T::from_map(map).map(given)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Point {
        x: Sent<f64>,
        name: Sent<String>,
    }
    impl<'de> Kind<'de> for Point {
        fn from_map<A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
            object(map)
        }
    }

    fn read<T: for<'de> Kind<'de>>(json: &str) -> Sent<T> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn every_json_type_reads_as_given_or_wrong_without_an_error() {
        assert_eq!(read::<String>(r#""a""#), Sent::Given("a".to_owned()));
        assert_eq!(read::<String>("5"), Sent::Wrong);
        assert_eq!(read::<String>("null"), Sent::Absent);
        assert_eq!(read::<i64>("5.0"), Sent::Given(5));
        assert_eq!(read::<i64>("-5"), Sent::Given(-5));
        assert_eq!(read::<i64>("5.5"), Sent::Wrong);
        assert_eq!(read::<i64>("18446744073709551615"), Sent::Wrong);
        assert_eq!(read::<f64>("5"), Sent::Given(5.0));
        assert_eq!(read::<bool>(r#""yes""#), Sent::Wrong);
        assert_eq!(read::<bool>(r#"[1, {"a": [2]}]"#), Sent::Wrong);
        assert_eq!(read::<bool>(r#"{"a": [true]}"#), Sent::Wrong);
        assert_eq!(
            read::<Vec<Sent<i64>>>(r#"[1, "two", null]"#),
            Sent::Given(vec![Sent::Given(1), Sent::Wrong, Sent::Absent])
        );
        assert_eq!(read::<Vec<Sent<i64>>>(r#""1,2""#), Sent::Wrong);
    }

    #[test]
    fn an_object_reads_every_field_and_a_missing_one_as_absent() {
        assert_eq!(
            read::<Point>(r#"{"x": "far", "other": 1}"#),
            Sent::Given(Point {
                x: Sent::Wrong,
                name: Sent::Absent
            })
        );
        assert_eq!(read::<Point>("[1, 2]"), Sent::Wrong);
        assert!(serde_json::from_str::<Sent<Point>>(r#"{"x": 1,"#).is_err());
    }
}
