//! A deserializer adapter that reads PascalCase map keys as camelCase, while deserializing.
//!
//! Hand-written because no crate does it at every depth while refusing a field sent in both
//! spellings (serde has no such option; `serde-aux` reads one level and keeps one silently).
//!
//! A .NET client's serializer writes `GameId` where a type declared with camelCase names reads
//! `gameId`. Rewriting a parsed JSON tree's keys first makes a second copy of every body; this
//! adapter instead wraps the deserializer and, wherever a map key is read at any depth (objects
//! inside arrays inside objects), lowers its first letter when that letter is an ASCII capital
//! ([`camel_case`]). Everything else passes through untouched, so `serde_path_to_error` still
//! names the field of a bad value.
//!
//! An object that carries one field twice in the same spelling is refused (`duplicate field`).
//! Of a field sent as both `GameId` and `gameId`, the camelCase value is kept when the object
//! is read into a tree; a type with fixed fields reports the second as a duplicate, and the
//! caller may read a tree first. Enum variants are not rewritten (no map key names one).

#![warn(missing_docs)]

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// A deserializer whose map keys are read as camelCase at every depth.
pub struct CamelCase<D>(pub D);

/// `name` with its first letter lowered when that letter is an ASCII capital (`GameId` →
/// `gameId`); borrowed when it is camelCase already.
pub fn camel_case(name: &str) -> Cow<'_, str> {
    match name.as_bytes().first() {
        Some(b) if b.is_ascii_uppercase() => {
            let mut owned = name.to_owned();
            owned[..1].make_ascii_lowercase();
            Cow::Owned(owned)
        }
        _ => Cow::Borrowed(name),
    }
}

/// Forwards every `deserialize_*` of a wrapper to the inner deserializer with the visitor
/// wrapped in `$wrap`.
macro_rules! forward_deserializer {
    ($($method:ident),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
                let (inner, visitor) = self.parts(visitor);
                inner.$method(visitor)
            }
        )*
        fn deserialize_unit_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            let (inner, visitor) = self.parts(visitor);
                inner.deserialize_unit_struct(name, visitor)
        }
        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            let (inner, visitor) = self.parts(visitor);
                inner.deserialize_newtype_struct(name, visitor)
        }
        fn deserialize_tuple<V: Visitor<'de>>(
            self,
            len: usize,
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            let (inner, visitor) = self.parts(visitor);
                inner.deserialize_tuple(len, visitor)
        }
        fn deserialize_tuple_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            len: usize,
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            let (inner, visitor) = self.parts(visitor);
                inner.deserialize_tuple_struct(name, len, visitor)
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            fields: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            let (inner, visitor) = self.parts(visitor);
                inner.deserialize_struct(name, fields, visitor)
        }
        fn deserialize_enum<V: Visitor<'de>>(
            self,
            name: &'static str,
            variants: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            let (inner, visitor) = self.parts(visitor);
                inner.deserialize_enum(name, variants, visitor)
        }
        fn is_human_readable(&self) -> bool {
            self.0.is_human_readable()
        }
    };
}

impl<D> CamelCase<D> {
    /// The inner deserializer, and `visitor` as this wrapper hands it over.
    fn parts<V>(self, visitor: V) -> (D, Values<V>) {
        (self.0, Values(visitor))
    }
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for CamelCase<D> {
    type Error = D::Error;

    forward_deserializer!(
        deserialize_any,
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_option,
        deserialize_unit,
        deserialize_seq,
        deserialize_map,
        deserialize_identifier,
        deserialize_ignored_any,
    );
}

/// Forwards the visits that carry no nested data to the inner visitor.
macro_rules! forward_scalars {
    () => {
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            self.0.expecting(f)
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
            self.0.visit_bool(v)
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            self.0.visit_i64(v)
        }
        fn visit_i128<E: de::Error>(self, v: i128) -> Result<Self::Value, E> {
            self.0.visit_i128(v)
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            self.0.visit_u64(v)
        }
        fn visit_u128<E: de::Error>(self, v: u128) -> Result<Self::Value, E> {
            self.0.visit_u128(v)
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            self.0.visit_f64(v)
        }
        fn visit_char<E: de::Error>(self, v: char) -> Result<Self::Value, E> {
            self.0.visit_char(v)
        }
        fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Self::Value, E> {
            self.0.visit_bytes(v)
        }
        fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Self::Value, E> {
            self.0.visit_borrowed_bytes(v)
        }
        fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Self::Value, E> {
            self.0.visit_byte_buf(v)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            self.0.visit_none()
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            self.0.visit_unit()
        }
        fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
            self.0.visit_enum(data)
        }
    };
}

/// The visitor of a value: nested maps, lists, options and newtypes stay case-mapped.
struct Values<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for Values<V> {
    type Value = V::Value;

    forward_scalars!();

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        self.0.visit_str(v)
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        self.0.visit_borrowed_str(v)
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        self.0.visit_string(v)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.visit_some(CamelCase(d))
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.visit_newtype_struct(CamelCase(d))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.0.visit_seq(Elements(seq))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.visit_map(Entries {
            map,
            seen: Vec::new(),
        })
    }
}

/// The elements of a list, each case-mapped.
struct Elements<A>(A);

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Elements<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Nested(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

/// The entries of an object: keys camelCased, values case-mapped, and of a field sent in both
/// spellings the camelCase one.
struct Entries<A> {
    map: A,
    /// The object's keys so far, camelCased, each with whether it was sent in camelCase.
    seen: Vec<(String, bool)>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Entries<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(sent) = self.map.next_key::<String>()? else {
                return Ok(None);
            };
            let key = camel_case(&sent);
            let as_camel = matches!(key, Cow::Borrowed(_));
            let key = key.into_owned();
            match self.seen.iter().find(|(seen, _)| *seen == key) {
                Some(&(_, camel)) if camel == as_camel => {
                    return Err(de::Error::custom(format_args!("duplicate field `{key}`")));
                }
                // Its camelCase spelling came first: this one is ignored.
                Some(&(_, true)) => {
                    self.map.next_value::<de::IgnoredAny>()?;
                    continue;
                }
                // Its PascalCase spelling came first: this one replaces it in a tree, and a
                // type's duplicate-field error lets the caller read a tree instead.
                _ => {}
            }
            self.seen.push((key.clone(), as_camel));
            return seed
                .deserialize(de::value::StringDeserializer::new(key))
                .map(Some);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(Nested(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// A seed whose deserializer is case-mapped.
struct Nested<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Nested<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(CamelCase(d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Lap {
        lap_time_ms: u32,
        sector_times_ms: Option<Vec<u32>>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Upload {
        game_id: String,
        laps: Vec<Lap>,
        best: Option<Lap>,
        extra: BTreeMap<String, u32>,
    }

    fn read<T: serde::de::DeserializeOwned>(json: &str) -> Result<T, String> {
        let mut de = serde_json::Deserializer::from_str(json);
        serde_path_to_error::deserialize(CamelCase(&mut de))
            .map_err(|e| format!("{}: {}", e.path(), e.inner()))
    }

    #[test]
    fn pascal_and_camel_case_read_alike_at_every_depth() {
        let pascal = r#"{"GameId": "acc", "Laps": [{"LapTimeMs": 90000, "SectorTimesMs": [30000]}],
                         "Best": {"LapTimeMs": 1, "SectorTimesMs": null}, "Extra": {"Tyres": 4}}"#;
        let camel = r#"{"gameId": "acc", "laps": [{"lapTimeMs": 90000, "sectorTimesMs": [30000]}],
                        "best": {"lapTimeMs": 1}, "extra": {"tyres": 4}}"#;
        let a: Upload = read(pascal).unwrap();
        let b: Upload = read(camel).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.extra.get("tyres"), Some(&4));
        assert_eq!(a.laps[0].sector_times_ms, Some(vec![30000]));
    }

    #[test]
    fn errors_still_name_the_field_path() {
        let err =
            read::<Upload>(r#"{"GameId": "acc", "Laps": [{"LapTimeMs": "fast"}], "Extra": {}}"#)
                .unwrap_err();
        assert!(err.starts_with("laps[0].lapTimeMs: invalid type"), "{err}");
        let twice = read::<Upload>(r#"{"GameId": "a", "gameId": "b", "Laps": [], "Extra": {}}"#)
            .unwrap_err();
        assert!(twice.contains("duplicate field `gameId`"), "{twice}");
    }

    #[test]
    fn a_tree_gets_camel_case_keys_and_the_camel_case_spelling_at_any_depth() {
        let tree: serde_json::Value =
            read(r#"{"GameId": "acc", "Laps": [{"LapTimeMs": 1, "isValid": true}]}"#).unwrap();
        assert_eq!(
            tree,
            serde_json::json!({"gameId": "acc", "laps": [{"lapTimeMs": 1, "isValid": true}]})
        );
        for both in [
            r#"{"Laps": [{"LapTimeMs": 1, "lapTimeMs": 2}]}"#,
            r#"{"Laps": [{"lapTimeMs": 2, "LapTimeMs": 1}]}"#,
        ] {
            let tree: serde_json::Value = read(both).unwrap();
            assert_eq!(
                tree,
                serde_json::json!({"laps": [{"lapTimeMs": 2}]}),
                "{both}"
            );
        }
        let twice = read::<serde_json::Value>(r#"{"a": 1, "a": 2}"#).unwrap_err();
        assert!(twice.contains("duplicate field `a`"), "{twice}");
    }

    #[test]
    fn only_a_leading_ascii_capital_changes() {
        assert_eq!(camel_case("GameId"), "gameId");
        assert_eq!(camel_case("gameId"), "gameId");
        assert_eq!(camel_case("ÉTape"), "ÉTape");
        assert_eq!(camel_case(""), "");
        assert!(matches!(camel_case("x"), Cow::Borrowed(_)));
    }
}
