//! AI coaching: one-shot insights and multi-turn chat about a lap, over a language model
//! (Anthropic's Messages API, or any OpenAI Chat Completions-compatible server), with
//! store-backed limits and stored answers. The models' HTTPS clients are adapters of the
//! [`llm::LanguageModel`] port, in `paddock-clients`.

pub mod answers;
pub mod budget;
pub mod coach;
pub mod context;
pub mod llm;
pub mod prompt;
