//! The key table: one list that both the help overlay and the docs read,
//! so what `?` shows is what the keys do.

/// (keys, what they do), in the order the overlay shows them.
pub const KEYS: &[(&str, &str)] = &[
    ("Enter / i", "type into the focused pane (Ctrl-b leaves)"),
    ("Ctrl-b Ctrl-b", "send a literal Ctrl-b to the pane"),
    ("n", "new agent in this tab (provider, folder)"),
    ("% / |", "split: new agent to the right"),
    ("\" / -", "split: new agent below"),
    ("arrows / h j k l", "move the focus"),
    ("H J K L", "resize the focused split"),
    ("z", "zoom the focused pane"),
    ("p", "park the focused pane"),
    ("b", "bury the focused pane"),
    ("Tab / S-Tab", "select in the parked & buried list"),
    ("u", "unpark / unbury the selected one here"),
    ("U", "unbury the last buried pane"),
    ("*", "pin / unpin the focused pane"),
    ("1-9", "go to pinned session N"),
    ("w", "wake / retry the focused pane"),
    ("x", "close the focused session"),
    ("t / r / X", "new / rename / close tab"),
    ("( / )", "previous / next tab"),
    (
        "[ / PgUp / S-PgUp",
        "copy mode: scroll back through the pane's history",
    ),
    (
        "  arrows / h j k l",
        "copy mode: move (PgUp PgDn a page, g top, G bottom)",
    ),
    (
        "  / ? then n N",
        "copy mode: search down / up, next / previous match",
    ),
    (
        "  v or Space, y or Enter",
        "copy mode: select, copy (OSC 52 + clipboard); q leaves",
    ),
    ("]", "paste the last copy into the focused pane"),
    (
        "mouse",
        "wheel scrolls history, click focuses, drag a divider",
    ),
    ("{ / }", "previous / next host ([hosts] in config)"),
    ("?", "this help"),
    ("q", "quit (sessions keep running)"),
];
