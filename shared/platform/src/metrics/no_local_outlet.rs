//! A build without the `prometheus` feature (a Lambda function, whose metrics go to
//! CloudWatch) has no local outlet: none can be made, and the exporter is not linked.

use ::metrics::Recorder;

/// No local outlet: a type without values.
pub(super) enum LocalOutlet {}

impl LocalOutlet {
    /// Never called: a local outlet is made only with the feature.
    pub(super) fn new() -> Self {
        unreachable!("built without the prometheus feature")
    }

    pub(super) fn recorder(&self) -> &dyn Recorder {
        match *self {}
    }

    pub(super) fn upkeep(&self) {
        match *self {}
    }

    pub(super) fn render(&self) -> String {
        match *self {}
    }
}
