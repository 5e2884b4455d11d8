//! What a history import did to one kind of thing (its subscriptions, stars, rules…).

/// What an import did (or, in a dry run, would do) to one kind of thing.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct KindReport {
    /// Added or changed.
    pub added: usize,
    /// Already so in tidings: nothing to do.
    pub unchanged: usize,
    /// Kept another way (a starred item kept as a bookmark).
    pub kept_as_bookmark: usize,
    /// Not imported; `reasons` says why.
    pub failed: usize,
    /// One line per thing not imported.
    pub reasons: Vec<String>,
    /// Not carried over because tidings has no place for it (a label on an item kept as a
    /// bookmark, a setting tidings does not have), which no second run would change: said in
    /// `notes`, and not a failure of the import.
    pub not_kept: usize,
    /// One line per thing not kept.
    pub notes: Vec<String>,
    /// What was added (in a dry run: would be), by name, for the kinds a user wants to see
    /// one by one (rules).
    pub names: Vec<String>,
}

impl KindReport {
    pub(crate) fn fail(&mut self, reason: String) {
        self.failed += 1;
        self.reasons.push(reason);
    }

    pub(crate) fn not_kept(&mut self, note: String) {
        self.not_kept += 1;
        self.notes.push(note);
    }

    /// Whether nothing at all was counted.
    pub fn is_empty(&self) -> bool {
        self.added + self.unchanged + self.kept_as_bookmark + self.failed + self.not_kept == 0
    }
}
