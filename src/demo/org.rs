//! The demo organisation: teams with owners, their projects and the people tagging spend.

/// What a project mostly runs; decides its usage types and its weekly rhythm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// Long training runs on p4d/p5: busy every day.
    Training,
    /// Always-on endpoints on g5/g6: busy every day, some reserved capacity.
    Serving,
    /// Notebooks and spot experiments: quiet at weekends.
    Research,
    /// Hosted models through Bedrock plus a little GPU.
    ManagedModels,
    /// Feature pipelines: CPU and storage.
    Data,
    /// A small model served on an instance far larger than it needs, beside a SageMaker
    /// endpoint that never scales in: the seeds' serving anti-patterns.
    OversizedServing,
    /// Experiments whose GPU notebook is never switched off.
    ResearchAlwaysOn,
    /// A two-day hyperparameter sweep every week on on-demand GPUs.
    Sweeps,
}

/// What a demo project declares in burnrate (workload, and for some a model), as a team
/// would after reading the Savings page's first suggestions. Two have declared nothing yet,
/// as on a real account: their workloads are inferred from the bill.
pub fn declared(project: &DemoProject) -> crate::savings::ProjectFacts {
    use crate::savings::model::{Model, Precision, Workload as Declared};
    let workload = match (project.name, project.workload) {
        ("image-tagging", _) | (_, Workload::Sweeps) => Declared::Unknown,
        ("batch-inference", _) => Declared::Batch,
        (_, Workload::Training) => Declared::Training,
        (_, Workload::Serving | Workload::ManagedModels | Workload::OversizedServing) => Declared::Serving,
        (_, Workload::Research | Workload::ResearchAlwaysOn) => Declared::Dev,
        (_, Workload::Data) => Declared::Batch,
    };
    let model = |tenths: i64, precision| {
        Some(Model {
            params_b: rust_decimal::Decimal::new(tenths, 1),
            precision,
        })
    };
    let model = match project.name {
        "llm-pretrain" => model(700, Precision::Bf16),
        "llm-finetune" | "chat-serving" => model(70, Precision::Bf16),
        "embeddings-api" => model(5, Precision::Fp16),
        "asr-large" => model(15, Precision::Fp16),
        _ => None,
    };
    crate::savings::ProjectFacts { workload, model }
}

pub struct DemoTeam {
    pub name: &'static str,
    pub owners: &'static [(&'static str, &'static str)],
}

pub struct DemoProject {
    pub name: &'static str,
    /// Index into [`TEAMS`]; `None` leaves the project unmapped (its spend is Unassigned).
    pub team: Option<usize>,
    pub workload: Workload,
    /// Relative size: daily spend scales with it.
    pub weight: u32,
    /// Months before the last demo month in which the project starts spending.
    pub starts_months_ago: u32,
}

pub const TEAMS: [DemoTeam; 10] = [
    DemoTeam {
        name: "ml-research",
        owners: &[("Alice Moreau", "alice@example.com")],
    },
    DemoTeam {
        name: "llm-platform",
        owners: &[("Bilal Haddad", "bilal@example.com"), ("Chen Wei", "chen@example.com")],
    },
    DemoTeam {
        name: "inference",
        owners: &[("Dana Kowalski", "dana@example.com")],
    },
    DemoTeam {
        name: "vision",
        owners: &[("Emeka Obi", "emeka@example.com")],
    },
    DemoTeam {
        name: "speech",
        owners: &[("Freya Lind", "freya@example.com")],
    },
    DemoTeam {
        name: "recsys",
        owners: &[("Gabriel Silva", "gabriel@example.com")],
    },
    DemoTeam {
        name: "data-platform",
        owners: &[("Hana Sato", "hana@example.com")],
    },
    DemoTeam {
        name: "search",
        owners: &[("Ivan Petrov", "ivan@example.com")],
    },
    DemoTeam {
        name: "robotics",
        owners: &[("Julia Costa", "julia@example.com")],
    },
    DemoTeam {
        name: "applied-ai",
        owners: &[
            ("Kofi Mensah", "kofi@example.com"),
            ("Lena Fischer", "lena@example.com"),
        ],
    },
];

/// The demo organisation's AWS accounts, as Cost Explorer names them in a management account:
/// the management account pays the untagged shared spend (tax, refunds), member accounts hold
/// groups of teams, and a sandbox holds the projects no team owns.
pub const ACCOUNTS: [(&str, &str); 5] = [
    ("402517735110", "acme-management"),
    ("518273640931", "research-prod"),
    ("629384751042", "platform-prod"),
    ("730495862153", "serving-prod"),
    ("841506973264", "ml-sandbox"),
];

/// The account a project's spend is in: by its team (research, platform or serving), the
/// sandbox for projects no team owns.
pub fn account_of(team: Option<usize>) -> &'static str {
    let index = match team.map(|t| TEAMS[t].name) {
        Some("ml-research" | "vision" | "speech" | "robotics") => 1,
        Some("llm-platform" | "data-platform" | "search") => 2,
        Some(_) => 3,
        None => 4,
    };
    ACCOUNTS[index].0
}

/// A project name that is also an XSS payload: tag values are untrusted text.
pub const HOSTILE_PROJECT: &str = "<img src=x onerror=alert(1)>";

const fn project(
    name: &'static str,
    team: Option<usize>,
    workload: Workload,
    weight: u32,
    starts_months_ago: u32,
) -> DemoProject {
    DemoProject {
        name,
        team,
        workload,
        weight,
        starts_months_ago,
    }
}

use Workload::*;

pub const PROJECTS: [DemoProject; 30] = [
    project("llm-pretrain", Some(0), Training, 10, 13),
    project("rlhf-eval", Some(0), Sweeps, 3, 13),
    project("moe-experiments", Some(0), ResearchAlwaysOn, 4, 8),
    project("llm-finetune", Some(1), Training, 6, 13),
    project("tokenizer-lab", Some(1), Research, 1, 11),
    project("model-gateway", Some(1), Serving, 4, 13),
    project("chat-serving", Some(2), OversizedServing, 7, 13),
    project("embeddings-api", Some(2), Serving, 3, 12),
    project("batch-inference", Some(2), Research, 3, 10),
    project("detector-v3", Some(3), Training, 4, 13),
    project("image-tagging", Some(3), Serving, 2, 13),
    project("video-understanding", Some(3), Research, 3, 6),
    project("asr-large", Some(4), Training, 4, 13),
    project("tts-voices", Some(4), Research, 2, 13),
    project("speech-serving", Some(4), Serving, 2, 12),
    project("ranker-v2", Some(5), Training, 3, 13),
    project("feature-store", Some(5), Data, 2, 13),
    project("two-tower", Some(5), Research, 2, 9),
    project("etl-spark", Some(6), Data, 3, 13),
    project("data-labeling", Some(6), ManagedModels, 2, 13),
    project("lakehouse", Some(6), Data, 2, 13),
    project("semantic-search", Some(7), Serving, 3, 13),
    project("rag-assistant", Some(7), ManagedModels, 3, 7),
    project("query-rewrite", Some(7), Research, 1, 13),
    project("sim2real", Some(8), Training, 3, 13),
    project("manipulation-policy", Some(8), Research, 2, 11),
    project("copilot-pilot", Some(9), ManagedModels, 3, 5),
    project("doc-extraction", Some(9), Serving, 2, 13),
    project(HOSTILE_PROJECT, Some(9), Research, 1, 13),
    project("scratch-gpu", None, Research, 1, 4),
];

const FIRST_NAMES: [&str; 50] = [
    "aaron", "beatriz", "carlos", "deepa", "elif", "farid", "grace", "hiro", "ines", "jonas", "kavya", "liam", "mei",
    "nadia", "omar", "priya", "quentin", "rosa", "sanjay", "tomas", "uma", "victor", "wen", "ximena", "yusuf", "zara",
    "amara", "bruno", "clara", "dmitri", "esra", "felix", "gita", "hugo", "ivy", "jamal", "keiko", "luca", "maya",
    "nils", "olga", "pablo", "rin", "sofia", "theo", "ulla", "vera", "wiremu", "yara", "zoe",
];

/// 100 user tag values, ten per team, in team order (`aaron.b` belongs to team 0).
pub fn user_names() -> Vec<String> {
    let initials = ['b', 'k'];
    (0..100)
        .map(|i| {
            format!(
                "{}.{}",
                FIRST_NAMES[i % FIRST_NAMES.len()],
                initials[i / FIRST_NAMES.len()]
            )
        })
        .collect()
}

/// The team index of user number `i` in [`user_names`].
pub fn user_team(i: usize) -> usize {
    i / 10
}
