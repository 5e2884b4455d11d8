//! What a user's rules decide for one item: the union of the actions of every rule that
//! catches it, with hiding first.

use std::collections::BTreeSet;

use crate::action::Action;
use std::borrow::Borrow;

use crate::item::PreparedItem;
use crate::rule::Rule;

/// What the rules decided for an item, for one user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The item is hidden from this user (a hide rule caught it, or a keep-only rule in its
    /// scope did not). A hidden item gets none of the other actions: for this user it is as if
    /// it had not arrived.
    pub hidden: bool,
    /// Marked read.
    pub read: bool,
    /// Starred.
    pub star: bool,
    /// Labels to add.
    pub labels: BTreeSet<String>,
    /// Notification channels to send it to.
    pub notify: BTreeSet<i64>,
    /// Queued for a summary.
    pub summarize: bool,
    /// The rules that caught it (or, for keep-only, hid it), in order.
    pub rules: Vec<i64>,
}

impl Outcome {
    /// Whether the rules changed nothing.
    pub fn is_empty(&self) -> bool {
        !self.hidden
            && !self.read
            && !self.star
            && self.labels.is_empty()
            && self.notify.is_empty()
            && !self.summarize
    }
}

/// What a user's rules decide anew when something is learned about an item after it arrived
/// (its tags, found a moment later; its popularity, counted later still): what differs between
/// their outcome before and after. Only what newly holds acts, so a mark the user undid is not
/// made again when the same thing is learned twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The item, visible until now, is hidden.
    Hide,
    /// The item, hidden until now (a keep-only rule it failed), is shown, with the actions of
    /// the rules that catch it now.
    Show(Outcome),
    /// The item stays visible and gets actions no rule took before.
    Act(Outcome),
}

impl Outcome {
    /// What changes from `before` (the outcome the rules had for the item) to `self` (their
    /// outcome with what was learned), or `None` when nothing does.
    pub fn change_from(&self, before: &Outcome) -> Option<Change> {
        match (before.hidden, self.hidden) {
            (true, true) => None,
            (false, true) => Some(Change::Hide),
            (true, false) => Some(Change::Show(self.clone())),
            (false, false) => {
                let added = Outcome {
                    hidden: false,
                    read: self.read && !before.read,
                    star: self.star && !before.star,
                    labels: self.labels.difference(&before.labels).cloned().collect(),
                    notify: self.notify.difference(&before.notify).copied().collect(),
                    summarize: self.summarize && !before.summarize,
                    rules: self
                        .rules
                        .iter()
                        .filter(|id| !before.rules.contains(id))
                        .copied()
                        .collect(),
                };
                (!added.is_empty()).then_some(Change::Act(added))
            }
        }
    }
}

/// Runs `rules` (one user's enabled rules, in their order) on an item of `feed_id` in the
/// user's group `group_id`, at `now`. The rules may be shared (`Arc<Rule>`), as a store's
/// cache of compiled rules keeps them.
pub fn evaluate<R: std::borrow::Borrow<Rule>>(
    rules: &[R],
    item: &PreparedItem<'_>,
    group_id: Option<i64>,
    now: i64,
) -> Outcome {
    let mut outcome = Outcome::default();
    let feed_id = item.item.feed_id;
    let in_scope = || {
        rules
            .iter()
            .map(Borrow::borrow)
            .filter(|r: &&Rule| r.in_scope(feed_id, group_id))
    };
    // Visibility first: when the item is hidden, nothing else is done with it.
    for rule in in_scope().filter(|r| r.actions.iter().any(Action::is_visibility)) {
        let matched = rule.matches(item, now);
        let keep_only = rule.actions.contains(&Action::KeepOnly);
        if matched != keep_only {
            outcome.hidden = true;
            outcome.rules.push(rule.id);
            return outcome;
        }
    }
    // A rule that only hides or keeps was judged above: it is not matched a second time.
    let acts = |r: &&Rule| r.actions.iter().any(|a| !a.is_visibility());
    for rule in in_scope().filter(acts) {
        if !rule.matches(item, now) {
            continue;
        }
        let mut acted = false;
        for action in &rule.actions {
            acted = true;
            match action {
                Action::Hide | Action::KeepOnly => acted = false,
                Action::Read => outcome.read = true,
                Action::Star => outcome.star = true,
                Action::Label(label) => {
                    outcome.labels.insert(label.clone());
                }
                Action::Notify(channel) => {
                    outcome.notify.insert(*channel);
                }
                Action::Summarize => outcome.summarize = true,
            }
        }
        if acted {
            outcome.rules.push(rule.id);
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::RuleItem;
    use crate::rule::RuleSpec;

    fn rule(id: i64, json: &str) -> Rule {
        Rule::compile(id, &serde_json::from_str::<RuleSpec>(json).unwrap()).unwrap()
    }

    fn item(feed_id: i64, title: &str) -> PreparedItem<'_> {
        PreparedItem::new(RuleItem {
            feed_id,
            title,
            published_at: 1_000,
            ..RuleItem::default()
        })
    }

    #[test]
    fn actions_of_every_catching_rule_add_up() {
        let rules = [
            rule(1, r#"{"query":"rust","actions":["star","label:Lang"]}"#),
            rule(
                2,
                r#"{"query":"release","actions":["read","notify:4","summarize"]}"#,
            ),
            rule(3, r#"{"query":"python","actions":["label:Py"]}"#),
        ];
        let outcome = evaluate(&rules, &item(1, "Rust release"), None, 2_000);
        assert!(!outcome.hidden && outcome.star && outcome.read && outcome.summarize);
        assert_eq!(outcome.labels, BTreeSet::from(["Lang".to_string()]));
        assert_eq!(outcome.notify, BTreeSet::from([4]));
        assert_eq!(outcome.rules, [1, 2]);
        assert!(evaluate(&rules, &item(1, "Go news"), None, 2_000).is_empty());
    }

    #[test]
    fn a_hidden_item_gets_nothing_else() {
        let rules = [
            rule(1, r#"{"query":"rust","actions":["star"]}"#),
            rule(2, r#"{"query":"sponsored","actions":["hide"]}"#),
        ];
        let outcome = evaluate(&rules, &item(1, "Sponsored: Rust course"), None, 2_000);
        assert!(outcome.hidden && !outcome.star);
        assert_eq!(outcome.rules, [2]);
    }

    #[test]
    fn keep_only_hides_what_it_does_not_catch_in_its_scope() {
        let rules = [rule(
            7,
            r#"{"scope":{"feed_id":1},"query":"rust","actions":["keep_only","star"]}"#,
        )];
        assert!(evaluate(&rules, &item(1, "Go news"), None, 2_000).hidden);
        let kept = evaluate(&rules, &item(1, "Rust news"), None, 2_000);
        assert!(!kept.hidden && kept.star);
        // Another feed is out of the rule's scope.
        assert!(evaluate(&rules, &item(2, "Go news"), None, 2_000).is_empty());
    }

    #[test]
    fn only_what_newly_holds_changes() {
        let rules = [
            rule(1, r#"{"query":"tag:rust","actions":["star","label:Lang"]}"#),
            rule(2, r#"{"query":"release","actions":["read"]}"#),
        ];
        let tags = ["rust".to_string()];
        let before = item(1, "Rust release");
        let mut after = item(1, "Rust release");
        after.item.tags = &tags;
        let (old, new) = (
            evaluate(&rules, &before, None, 2_000),
            evaluate(&rules, &after, None, 2_000),
        );
        let Some(Change::Act(added)) = new.change_from(&old) else {
            panic!("{new:?} from {old:?}");
        };
        // The read mark was made on arrival: only the star and the label are new.
        assert!(added.star && !added.read);
        assert_eq!(added.labels, BTreeSet::from(["Lang".to_string()]));
        assert_eq!(added.rules, [1]);
        // Learning the same again changes nothing.
        assert_eq!(new.change_from(&new), None);
    }

    #[test]
    fn hiding_and_keeping_change_when_the_verdict_does() {
        let tags = ["rust".to_string()];
        let keep = [rule(
            7,
            r#"{"scope":{"feed_id":1},"query":"tag:rust","actions":["keep_only","star"]}"#,
        )];
        let before = item(1, "News");
        let mut after = item(1, "News");
        after.item.tags = &tags;
        let (old, new) = (
            evaluate(&keep, &before, None, 2_000),
            evaluate(&keep, &after, None, 2_000),
        );
        assert!(old.hidden);
        let Some(Change::Show(shown)) = new.change_from(&old) else {
            panic!("{new:?} from {old:?}");
        };
        assert!(shown.star && !shown.hidden);
        let hide = [rule(8, r#"{"query":"tag:rust","actions":["hide"]}"#)];
        let (old, new) = (
            evaluate(&hide, &before, None, 2_000),
            evaluate(&hide, &after, None, 2_000),
        );
        assert_eq!(new.change_from(&old), Some(Change::Hide));
        assert_eq!(old.change_from(&old), None);
    }
}
