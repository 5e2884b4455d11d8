//! `tidings rules list|add|test|apply`: a user's rules from the command line, as the API and
//! the UI have them. `test` shows what a rule would catch among the user's recent items
//! without saving it; `apply` acts once on existing items and prints the undo id.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use tidings_store::{RegexSpec, RuleInput, RuleScope, RuleSpec, Store, StoredRule};

use crate::config::GlobalConfig;
use crate::output::outln;

/// `tidings rules …`.
#[derive(Debug, Subcommand)]
pub enum RulesCommand {
    /// List a user's rules, in order.
    List(UserArg),
    /// Save a rule for a user; it acts on items that arrive from now on.
    Add(Box<AddArgs>),
    /// Show what a rule would catch among the user's 1,000 most recent items (saves nothing).
    Test(Box<RuleArgs>),
    /// Apply a saved rule once to the user's existing items; prints how many changed.
    Apply(ApplyArgs),
}

/// The user a command acts for.
#[derive(Debug, Args)]
pub struct UserArg {
    /// The user's name.
    #[arg(long)]
    pub user: String,
}

/// A rule's scope, conditions and actions on the command line.
#[derive(Debug, Args)]
pub struct RuleArgs {
    /// The user's name.
    #[arg(long)]
    pub user: String,
    /// Only this feed's items (its URL, as subscribed).
    #[arg(long, value_name = "URL", conflicts_with = "group")]
    pub feed: Option<String>,
    /// Only the items of this group's feeds (its name).
    #[arg(long, value_name = "NAME")]
    pub group: Option<String>,
    /// A condition in the search language, with fields (title:, content:, author:, url:,
    /// tag:, category:, enclosure:, popularity:).
    #[arg(long, value_name = "QUERY")]
    pub query: Option<String>,
    /// A regular expression, on the field of --regex-field.
    #[arg(long, value_name = "PATTERN")]
    pub regex: Option<String>,
    /// The field --regex looks at: title, content, author, url or tag, or several joined by
    /// commas (url,title: any of them).
    #[arg(long, value_name = "FIELD", default_value = "title")]
    pub regex_field: String,
    /// Items published more than this many days ago.
    #[arg(long, value_name = "DAYS")]
    pub older_than_days: Option<i64>,
    /// What it does (repeat for several): hide, keep_only, read, star, label:NAME,
    /// notify:CHANNEL_ID, summarize. Not needed for `test`.
    #[arg(long = "action", value_name = "ACTION")]
    pub actions: Vec<String>,
}

/// Arguments of `tidings rules add`.
#[derive(Debug, Args)]
pub struct AddArgs {
    /// The rule.
    #[command(flatten)]
    pub rule: RuleArgs,
    /// Its name (the query when not given).
    #[arg(long)]
    pub name: Option<String>,
    /// Save it switched off.
    #[arg(long)]
    pub disabled: bool,
}

/// Arguments of `tidings rules apply`.
#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// The user's name.
    #[arg(long)]
    pub user: String,
    /// The rule's id (see `tidings rules list`).
    pub id: i64,
}

/// Runs `tidings rules …`.
pub async fn run(config: &GlobalConfig, command: RulesCommand) -> anyhow::Result<ExitCode> {
    let user = match &command {
        RulesCommand::List(args) => &args.user,
        RulesCommand::Add(args) => &args.rule.user,
        RulesCommand::Test(args) => &args.user,
        RulesCommand::Apply(args) => &args.user,
    };
    let Some((store, user_id)) = super::open_for_user(config, user).await? else {
        return Ok(ExitCode::from(1));
    };
    let result = run_with(&store, user_id, command).await;
    store.close().await;
    result
}

async fn run_with(store: &Store, user_id: i64, command: RulesCommand) -> anyhow::Result<ExitCode> {
    match command {
        RulesCommand::List(_) => {
            for rule in store.list_rules(user_id).await? {
                print_rule(&rule)?;
            }
        }
        RulesCommand::Add(args) => {
            let Some(spec) = spec_of(store, user_id, &args.rule).await? else {
                return Ok(ExitCode::from(1));
            };
            let input = RuleInput {
                name: args
                    .name
                    .or_else(|| args.rule.query.clone())
                    .unwrap_or_else(|| "Rule".into()),
                enabled: !args.disabled,
                position: None,
                spec,
            };
            let saved = store.create_rule(user_id, &input).await?;
            print_rule(&saved)?;
        }
        RulesCommand::Test(args) => {
            let Some(mut spec) = spec_of(store, user_id, &args).await? else {
                return Ok(ExitCode::from(1));
            };
            // A test needs no action; one that changes nothing stands in.
            if spec.actions.is_empty() {
                spec.actions.push("read".into());
            }
            let preview = store.preview_rule(user_id, &spec).await?;
            outln!(
                "{} of the {} most recent items match",
                preview.matched,
                preview.looked_at
            );
            for item in preview.items {
                outln!(
                    "  {}  {}  ({})",
                    item.id,
                    item.title.as_deref().unwrap_or("(untitled)"),
                    item.feed_title
                );
            }
        }
        RulesCommand::Apply(args) => {
            let applied = store.apply_rule(user_id, args.id).await?;
            outln!(
                "{} items changed; undo within a week with POST /api/v1/rules/apply/undo \
                 {{\"undo\": {{\"application_id\": {}}}}}",
                applied.changed,
                applied.undo_id
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The spec the arguments give; `None` (after saying why) when the feed or group named is not
/// the user's.
async fn spec_of(store: &Store, user_id: i64, args: &RuleArgs) -> anyhow::Result<Option<RuleSpec>> {
    let mut scope = RuleScope::default();
    if let Some(url) = &args.feed {
        match store.feed_id_by_url(url).await? {
            Some(id) => scope.feed_id = Some(id),
            None => {
                eprintln!(
                    "tidings: no feed has the URL {url:?}; give it as a subscription shows it"
                );
                return Ok(None);
            }
        }
    }
    if let Some(name) = &args.group {
        let groups = store.list_groups(user_id).await?;
        match groups.iter().find(|g| g.name == *name) {
            Some(group) => scope.group_id = Some(group.id),
            None => {
                let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
                eprintln!("tidings: no group named {name:?}; the groups are {names:?}");
                return Ok(None);
            }
        }
    }
    Ok(Some(RuleSpec {
        scope,
        query: args.query.clone(),
        regex: args.regex.clone().map(|pattern| RegexSpec {
            field: args.regex_field.clone(),
            pattern,
        }),
        older_than_days: args.older_than_days,
        actions: args.actions.clone(),
    }))
}

/// One rule on a line: id, switch, name, conditions, actions.
fn print_rule(rule: &StoredRule) -> anyhow::Result<()> {
    let spec = &rule.spec;
    let mut conditions = Vec::new();
    if let Some(feed) = spec.scope.feed_id {
        conditions.push(format!("feed {feed}"));
    }
    if let Some(group) = spec.scope.group_id {
        conditions.push(format!("group {group}"));
    }
    if let Some(query) = &spec.query {
        conditions.push(format!("query {query:?}"));
    }
    if let Some(regex) = &spec.regex {
        conditions.push(format!("{} ~ /{}/", regex.field, regex.pattern));
    }
    if let Some(days) = spec.older_than_days {
        conditions.push(format!("older than {days} days"));
    }
    outln!(
        "{}\t{}\t{}\t{}\t{}",
        rule.id,
        if rule.enabled { "on" } else { "off" },
        rule.name,
        conditions.join(", "),
        spec.actions.join(" ")
    );
    Ok(())
}
