//! Layout requests a terminal UI needs: which tab is active, which pane has
//! the focus, and how a split divides its area.
//!
//! They only edit the persisted model (through `hangar-core`) and save it;
//! they never start or stop a process, so moving the focus onto a
//! hibernated pane does not wake it (attaching does).

use hangar_protocol::message as msg;
use serde_json::{Value, json};

use crate::Daemon;
use crate::errors::ApiError;

impl Daemon {
    pub fn op_focus(&self, req: msg::Focus) -> Result<Value, ApiError> {
        self.sessions.edit(|st| {
            let session = req
                .session
                .as_deref()
                .map(|s| st.resolve_session(s))
                .transpose()?;
            let tab = match (&req.tab, &session) {
                (Some(t), _) => st.resolve_tab(t)?,
                (None, Some(id)) => st.ws.pane_tab(id).map(|t| t.id.clone()).ok_or_else(|| {
                    ApiError::invalid(format!("session {id} is not a pane of any tab"))
                })?,
                (None, None) => return Err(ApiError::invalid("focus needs a tab or a session")),
            };
            st.ws.set_active_tab(&tab)?;
            if let Some(id) = &session {
                st.ws.set_focus(&tab, id)?;
            }
            st.save(&[])?;
            Ok(json!({
                "tab": tab.to_string(),
                "focus": st.ws.tab(&tab).and_then(|t| t.focus.as_ref()).map(|f| f.to_string()),
            }))
        })
    }

    pub fn op_ratio(&self, req: msg::Ratio) -> Result<Value, ApiError> {
        if !req.ratio.is_finite() {
            return Err(ApiError::invalid(
                "a ratio must be a number between 0.1 and 0.9",
            ));
        }
        let direction = match req.direction.as_deref() {
            None => None,
            Some("vertical") => Some(hangar_core::Direction::Vertical),
            Some("horizontal") => Some(hangar_core::Direction::Horizontal),
            Some(other) => {
                return Err(ApiError::invalid(format!(
                    "direction {other:?} is neither vertical nor horizontal"
                )));
            }
        };
        self.sessions.edit(|st| {
            let id = st.resolve_session(&req.session)?;
            match direction {
                None => st.ws.set_ratio(&id, req.ratio)?,
                Some(d) => {
                    if !st.ws.set_split_ratio(&id, d, req.ratio)? {
                        return Err(ApiError::invalid(format!(
                            "no {} split around session {id}",
                            req.direction.as_deref().unwrap_or_default()
                        )));
                    }
                }
            }
            st.save(&[])?;
            Ok(json!({"id": id.to_string(), "ratio": hangar_core::tile::clamp_ratio(req.ratio)}))
        })
    }
}
