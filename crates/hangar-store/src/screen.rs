//! The last screen of a session as hangar keeps it (DESIGN.md rule 3: a
//! hibernated session keeps its last screen), and how an export carries it.
//!
//! A screen is the byte stream that redraws it (text with its escape
//! sequences). In an export it is written as a JSON string when it is UTF-8
//! (it always is when hangar saved it) and as base64 otherwise, so no byte is
//! ever lost or replaced. This module never decides which screens to keep:
//! the store keeps one per session and drops it with the session.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Serialize;

use hangar_core::SessionId;

use crate::import::ImportError;
use crate::json_walk::Node;

/// One saved screen and when it was saved (milliseconds since the epoch).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SavedScreen {
    pub screen: Vec<u8>,
    pub updated_ms: u64,
}

/// The saved screens of a workspace, by session.
pub type Screens = BTreeMap<SessionId, SavedScreen>;

/// One screen in the export document.
#[derive(Serialize)]
pub(crate) struct ExportedScreen {
    updated_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    base64: Option<String>,
}

impl From<&SavedScreen> for ExportedScreen {
    fn from(saved: &SavedScreen) -> Self {
        match std::str::from_utf8(&saved.screen) {
            Ok(text) => ExportedScreen {
                updated_ms: saved.updated_ms,
                text: Some(text.to_owned()),
                base64: None,
            },
            Err(_) => ExportedScreen {
                updated_ms: saved.updated_ms,
                text: None,
                base64: Some(BASE64.encode(&saved.screen)),
            },
        }
    }
}

/// Read the export document's `screens` object (absent in exports written
/// before screens were exported: then there are none).
pub(crate) fn read_screens(node: Option<Node<'_>>) -> Result<Screens, ImportError> {
    let mut screens = Screens::new();
    let Some(node) = node else {
        return Ok(screens);
    };
    for (key, entry) in node.entries()? {
        let updated_ms = match entry.opt_field("updated_ms")? {
            Some(n) => n.u64()?,
            None => 0,
        };
        let screen = match (entry.opt_field("text")?, entry.opt_field("base64")?) {
            (Some(text), None) => text.str()?.as_bytes().to_vec(),
            (None, Some(encoded)) => BASE64
                .decode(encoded.str()?)
                .map_err(|e| encoded.invalid(format!("not valid base64: {e}")))?,
            _ => return Err(entry.invalid("expected exactly one of \"text\" and \"base64\"")),
        };
        screens.insert(SessionId::new(key), SavedScreen { screen, updated_ms });
    }
    Ok(screens)
}
