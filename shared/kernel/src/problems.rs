//! Field validation that lists every problem of a request at once.
//!
//! A leaf: the domain parses client input into its own types with these, and the HTTP layer
//! turns [`FieldProblems`] into a 400. Each problem reads `field: rule`.

/// Every problem found in one request, joined: `email: must be ...; password: must be ...`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FieldProblems(String);

impl FieldProblems {
    /// One problem of `field`.
    pub fn one(field: &str, rule: &str) -> Self {
        Self(format!("{field}: {rule}"))
    }
}

/// Collects field problems so one answer can list them all.
#[derive(Debug, Default)]
pub struct Problems(Vec<String>);

impl Problems {
    /// Parses a field; records `field: rule` on failure.
    pub fn check<T>(&mut self, field: &str, parsed: Result<T, String>) -> Option<T> {
        parsed
            .map_err(|rule| self.0.push(format!("{field}: {rule}")))
            .ok()
    }

    /// Parses a required field: records `field: is required` when it is absent.
    pub fn required<T, U>(
        &mut self,
        field: &str,
        value: Option<T>,
        parse: impl FnOnce(T) -> Result<U, String>,
    ) -> Option<U> {
        if let Some(v) = value {
            self.check(field, parse(v))
        } else {
            self.add(field, "is required");
            None
        }
    }

    /// Records a problem directly.
    pub fn add(&mut self, field: &str, rule: &str) {
        self.0.push(format!("{field}: {rule}"));
    }

    /// `Ok` when nothing was recorded, else every problem.
    pub fn finish(self) -> Result<(), FieldProblems> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(FieldProblems(self.0.join("; ")))
        }
    }

    /// `value` when nothing was recorded and it is complete, else every problem.
    ///
    /// Forms build `value` from the fields they parsed, so a form exists only when every
    /// field parsed: no field of a parsed form can be missing.
    pub fn into_result<T>(self, value: Option<T>) -> Result<T, FieldProblems> {
        match (self.finish(), value) {
            (Ok(()), Some(v)) => Ok(v),
            (Err(e), _) => Err(e),
            (Ok(()), None) => Err(FieldProblems("body: is incomplete".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_problem_is_listed() {
        let mut p = Problems::default();
        let a: Option<u32> =
            p.required("a", None::<String>, |s| s.parse().map_err(|_| "nan".into()));
        let b = p.required("b", Some("x"), |s| {
            s.parse::<u32>().map_err(|_| "must be a number".to_owned())
        });
        assert!(a.is_none() && b.is_none());
        assert_eq!(
            p.into_result(Some(())).unwrap_err().to_string(),
            "a: is required; b: must be a number"
        );
        assert_eq!(Problems::default().into_result(Some(1)), Ok(1));
    }
}
