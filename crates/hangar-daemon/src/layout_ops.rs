//! Layout requests a terminal UI needs: which tab is active, which pane has
//! the focus, and how a split divides its area.
//!
//! They only edit the persisted model (through `hangar-core`) and save it;
//! they never start or stop a process, so moving the focus onto a
//! hibernated pane does not wake it (attaching does).

use hangar_protocol::message as msg;
use serde_json::{Value, json};

use crate::Daemon;
use crate::state::ApiError;

impl Daemon {
    pub fn op_focus(&self, req: msg::Focus) -> Result<Value, ApiError> {
        let mut st = self.lock();
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
    }

    pub fn op_ratio(&self, req: msg::Ratio) -> Result<Value, ApiError> {
        if !req.ratio.is_finite() {
            return Err(ApiError::invalid(
                "a ratio must be a number between 0.1 and 0.9",
            ));
        }
        let mut st = self.lock();
        let id = st.resolve_session(&req.session)?;
        st.ws.set_ratio(&id, req.ratio)?;
        st.save(&[])?;
        Ok(json!({"id": id.to_string(), "ratio": hangar_core::tile::clamp_ratio(req.ratio)}))
    }
}
