//! Walking a parsed `serde_json::Value` by hand while tracking the exact JSON
//! path of every value, so an import error can always say where the bad value
//! is (`workspace.tabs[2].root.a.ratio: expected a number, found "x"`).
//!
//! It only reads; it never panics on any input, whatever its shape.

use serde_json::{Map, Value};

use crate::import::ImportError;

/// A value and the path that leads to it from the document root.
#[derive(Clone, Debug)]
pub(crate) struct Node<'a> {
    value: &'a Value,
    path: String,
}

impl<'a> Node<'a> {
    pub(crate) fn root(value: &'a Value) -> Self {
        Node {
            value,
            path: String::new(),
        }
    }

    pub(crate) fn value(&self) -> &'a Value {
        self.value
    }

    /// The path for messages; the root is called "(top level)".
    pub(crate) fn path(&self) -> String {
        if self.path.is_empty() {
            "(top level)".to_owned()
        } else {
            self.path.clone()
        }
    }

    fn key_path(&self, key: &str) -> String {
        let plain = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !plain {
            // Keys with dots, spaces or brackets are quoted so the path stays
            // unambiguous.
            let quoted = serde_json::to_string(key).unwrap_or_else(|_| format!("{key:?}"));
            format!("{}[{quoted}]", self.path)
        } else if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// An error at this node: "expected `what`, found <this value>".
    pub(crate) fn expected(&self, what: &str) -> ImportError {
        self.invalid(format!("expected {what}, found {}", describe(self.value)))
    }

    pub(crate) fn invalid(&self, message: impl Into<String>) -> ImportError {
        ImportError::Invalid {
            path: self.path(),
            message: message.into(),
        }
    }

    fn object(&self) -> Result<&'a Map<String, Value>, ImportError> {
        self.value
            .as_object()
            .ok_or_else(|| self.expected("an object"))
    }

    /// Whether this is an object holding `key` (even with a null value).
    pub(crate) fn has_key(&self, key: &str) -> bool {
        self.value.as_object().is_some_and(|m| m.contains_key(key))
    }

    /// The keys of an object (none for any other value).
    pub(crate) fn keys(&self) -> Vec<&'a str> {
        self.value
            .as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    /// A field that must be present (and not null).
    pub(crate) fn field(&self, key: &str) -> Result<Node<'a>, ImportError> {
        match self.opt_field(key)? {
            Some(node) => Ok(node),
            None => Err(ImportError::Invalid {
                path: self.key_path(key),
                message: "missing required field".to_owned(),
            }),
        }
    }

    /// A field that may be absent; null counts as absent.
    pub(crate) fn opt_field(&self, key: &str) -> Result<Option<Node<'a>>, ImportError> {
        Ok(match self.object()?.get(key) {
            None | Some(Value::Null) => None,
            Some(value) => Some(Node {
                value,
                path: self.key_path(key),
            }),
        })
    }

    pub(crate) fn opt_str(&self, key: &str) -> Result<Option<&'a str>, ImportError> {
        self.opt_field(key)?.map(|n| n.str()).transpose()
    }

    /// The elements of an array, each with its `[i]` path.
    pub(crate) fn array(&self) -> Result<Vec<Node<'a>>, ImportError> {
        let items = self
            .value
            .as_array()
            .ok_or_else(|| self.expected("an array"))?;
        Ok(items
            .iter()
            .enumerate()
            .map(|(i, value)| Node {
                value,
                path: format!("{}[{i}]", self.path),
            })
            .collect())
    }

    /// The entries of an object, each value with its `.key` path.
    pub(crate) fn entries(&self) -> Result<Vec<(&'a str, Node<'a>)>, ImportError> {
        Ok(self
            .object()?
            .iter()
            .map(|(key, value)| {
                (
                    key.as_str(),
                    Node {
                        value,
                        path: self.key_path(key),
                    },
                )
            })
            .collect())
    }

    pub(crate) fn str(&self) -> Result<&'a str, ImportError> {
        self.value.as_str().ok_or_else(|| self.expected("a string"))
    }

    pub(crate) fn f64(&self) -> Result<f64, ImportError> {
        self.value.as_f64().ok_or_else(|| self.expected("a number"))
    }

    pub(crate) fn u64(&self) -> Result<u64, ImportError> {
        self.value
            .as_u64()
            .ok_or_else(|| self.expected("a non-negative integer"))
    }

    /// Milliseconds since the epoch: a non-negative number (a fraction, as
    /// JavaScript may write, is dropped).
    pub(crate) fn ms(&self) -> Result<u64, ImportError> {
        if let Some(n) = self.value.as_u64() {
            return Ok(n);
        }
        match self.value.as_f64() {
            // `as` saturates; the range check keeps out negative values.
            Some(x) if x.is_finite() && x >= 0.0 => Ok(x as u64),
            _ => Err(self.expected("a time in milliseconds (a non-negative number)")),
        }
    }
}

/// A short description of a value for error messages.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => {
            const MAX: usize = 40;
            let shown: String = s.chars().take(MAX).collect();
            let quoted = serde_json::to_string(&shown).unwrap_or_else(|_| format!("{shown:?}"));
            if s.chars().count() > MAX {
                format!("{quoted}...")
            } else {
                quoted
            }
        }
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}
