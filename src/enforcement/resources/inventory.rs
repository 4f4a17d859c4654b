//! What one account runs in one region under the project tag key, read once and shared by
//! every project listed against it (`listing`): a stop's discovery picks its own project's
//! resources out of it by exact tag equality, then describes only those.
//!
//! Each read is one paged call per region, whatever the number of projects or resources:
//! - EC2: `DescribeInstances` with a `tag-key` filter and `instance-state-name`
//!   pending/running (<https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstances.html>),
//!   1,000 a page. EC2's own filter answers at once, where the tagging API may lag a launch.
//! - Notebooks and endpoints: their tags through the Resource Groups Tagging API,
//!   `GetResources` with a tag-key filter (no value: every resource carrying the key) and
//!   resource types `sagemaker:notebook-instance` and `sagemaker:endpoint`, 100 a page
//!   (<https://docs.aws.amazon.com/resourcegroupstagging/latest/APIReference/API_GetResources.html>),
//!   beside `ListNotebookInstances` (InService) and `ListEndpoints` (InService) for their
//!   state and type, 100 a page. No `ListTags` per resource.
//! - Training and processing jobs: `ListTrainingJobs` / `ListProcessingJobs` (InProgress),
//!   then `ListTags` for each job in progress, once per inventory. Not the tagging API: it
//!   lists every job ever tagged, finished ones included, which grows without end, where the
//!   jobs in progress at any time are few.
//!
//! Bounded: each paged read stops after [`MAX_PAGES`] pages and fails the listing with why
//! (AWS's own throttling answers are retried by the SDK's standard backoff, reads only).

use std::collections::HashMap;

use aws_sdk_ec2::types::{Filter, Instance};
use chrono::{DateTime, Utc};

use super::read::{Tags, literal_filter_value, one, sagemaker_error, time};
use super::{CallError, Clients, Kind};

/// Pages read from one paged call before a listing gives up: 100,000 instances or 10,000
/// tagged notebooks and endpoints per region.
pub const MAX_PAGES: usize = 100;

/// A SageMaker resource as its list call shows it.
#[derive(Debug, Clone)]
pub struct Listed {
    pub name: String,
    pub arn: String,
    /// A notebook's type (the list shows it); jobs and endpoints are described for theirs.
    pub instance_type: Option<String>,
    pub created: Option<DateTime<Utc>>,
}

/// The reads of one (account, region), each made on first need.
pub struct Inventory {
    pub region: String,
    pub readers: Clients,
    /// When the first read was made: what a listing built on it shows as its time.
    pub read_at: DateTime<Utc>,
    tag_key: String,
    instances: Option<Vec<Instance>>,
    /// Tags by lower-cased ARN of every notebook and endpoint carrying the tag key.
    tagged: Option<HashMap<String, Vec<(String, String)>>>,
    /// Tags by lower-cased ARN as SageMaker's `ListTags` answered them: jobs in progress, and
    /// notebooks and endpoints confirmed.
    job_tags: HashMap<String, Vec<(String, String)>>,
    lists: HashMap<Kind, Vec<Listed>>,
    /// Instance-store gigabytes by type, or why EC2 did not say.
    pub(super) stores: HashMap<String, Result<i64, String>>,
    /// The first read that failed: every later read answers it at once, so projects listed
    /// after it do not each ask a throttling API again (the lister drops the inventory).
    pub(super) failure: Option<CallError>,
    /// Whether a notebook's or endpoint's tags, as the tagging API indexes them, are read
    /// again from SageMaker (`ListTags`) before it counts as the project's: the index lags
    /// (a deleted resource lingers; a re-created name, or a tag changed, shows the old
    /// value for a while), so a stop about to run never acts on it alone.
    confirm: bool,
}

impl Inventory {
    pub fn new(sdk: &aws_config::SdkConfig, region: &str, tag_key: &str, confirm: bool) -> Inventory {
        Inventory {
            region: region.to_string(),
            readers: Clients::reading(sdk, region),
            read_at: Utc::now(),
            tag_key: tag_key.to_string(),
            instances: None,
            tagged: None,
            job_tags: HashMap::new(),
            lists: HashMap::new(),
            stores: HashMap::new(),
            failure: None,
            confirm,
        }
    }

    /// Keeps the first failure of a read (see `failure`).
    fn noted<T>(&mut self, result: Result<T, CallError>) -> Result<T, CallError> {
        if let Err(err) = &result
            && self.failure.is_none()
        {
            self.failure = Some(err.clone());
        }
        result
    }

    fn failed(&self) -> Result<(), CallError> {
        self.failure.clone().map_or(Ok(()), Err)
    }

    /// Pending and running instances carrying the tag key, whatever its value.
    pub async fn instances(&mut self) -> Result<&[Instance], CallError> {
        if self.instances.is_none() {
            self.failed()?;
            let read = self.read_instances().await;
            self.instances = Some(self.noted(read)?);
        }
        Ok(self.instances.as_deref().unwrap_or_default())
    }

    async fn read_instances(&self) -> Result<Vec<Instance>, CallError> {
        let mut out = Vec::new();
        let mut pages = self
            .readers
            .ec2
            .describe_instances()
            .filters(
                Filter::builder()
                    .name("tag-key")
                    .values(literal_filter_value(&self.tag_key))
                    .build(),
            )
            .filters(
                Filter::builder()
                    .name("instance-state-name")
                    .values("pending")
                    .values("running")
                    .build(),
            )
            .max_results(1000)
            .into_paginator()
            .send();
        let mut read = 0;
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| CallError::from_sdk("EC2", "DescribeInstances", &e))?;
            read = bounded(read, "EC2 DescribeInstances", &self.region)?;
            out.extend(page.reservations().iter().flat_map(|r| r.instances()).cloned());
        }
        Ok(out)
    }

    /// The resource's tags when it carries the tag key; `None` when it does not (or, for a
    /// job, when it ended or vanished before its tags were read).
    pub async fn tags_of(&mut self, kind: Kind, arn: &str) -> Result<Option<Vec<(String, String)>>, CallError> {
        let key = arn.to_ascii_lowercase();
        match kind {
            Kind::Notebook | Kind::Endpoint => {
                if self.tagged.is_none() {
                    self.failed()?;
                    let read = self.read_tagged().await;
                    self.tagged = Some(self.noted(read)?);
                }
                Ok(self.tagged.as_ref().and_then(|t| t.get(&key)).cloned())
            }
            _ => self.own_tags(arn).await,
        }
    }

    /// The resource's tags as SageMaker itself answers them (`ListTags`), once per
    /// inventory; `None` when it ended or vanished first.
    async fn own_tags(&mut self, arn: &str) -> Result<Option<Vec<(String, String)>>, CallError> {
        let key = arn.to_ascii_lowercase();
        if !self.job_tags.contains_key(&key) {
            self.failed()?;
            let read = self.list_tags(arn).await;
            let Some(tags) = one(self.noted(read))? else {
                return Ok(None);
            };
            self.job_tags.insert(key.clone(), tags);
        }
        Ok(self.job_tags.get(&key).cloned())
    }

    /// The tags to judge a resource by: for a notebook or endpoint the tagging API's entry
    /// named it the project's, SageMaker's own answer when the inventory confirms (a stop
    /// about to run); the index's otherwise.
    pub async fn confirmed(
        &mut self,
        kind: Kind,
        arn: &str,
        indexed: Vec<(String, String)>,
    ) -> Result<Option<Vec<(String, String)>>, CallError> {
        match kind {
            Kind::Notebook | Kind::Endpoint if self.confirm => self.own_tags(arn).await,
            _ => Ok(Some(indexed)),
        }
    }

    async fn read_tagged(&self) -> Result<HashMap<String, Vec<(String, String)>>, CallError> {
        use aws_sdk_resourcegroupstagging::types::TagFilter;
        let mut out = HashMap::new();
        let mut pages = self
            .readers
            .tagging
            .get_resources()
            .tag_filters(TagFilter::builder().key(&self.tag_key).build())
            .resource_type_filters("sagemaker:notebook-instance")
            .resource_type_filters("sagemaker:endpoint")
            .resources_per_page(100)
            .into_paginator()
            .send();
        let mut read = 0;
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| CallError::from_sdk("Resource Groups Tagging", "GetResources", &e))?;
            read = bounded(read, "Resource Groups Tagging GetResources", &self.region)?;
            for mapping in page.resource_tag_mapping_list() {
                let Some(arn) = mapping.resource_arn() else { continue };
                let tags = mapping
                    .tags()
                    .iter()
                    .map(|t| (t.key().to_string(), t.value().to_string()))
                    .collect();
                out.insert(arn.to_ascii_lowercase(), tags);
            }
        }
        Ok(out)
    }

    async fn list_tags(&self, arn: &str) -> Result<Vec<(String, String)>, CallError> {
        let mut pages = self
            .readers
            .sagemaker
            .list_tags()
            .resource_arn(arn)
            .into_paginator()
            .send();
        let mut all = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(sagemaker_error("ListTags"))?;
            all.extend(
                page.tags()
                    .iter()
                    .filter_map(|t| Some((t.key()?.to_string(), t.value().unwrap_or_default().to_string()))),
            );
        }
        Ok(all)
    }

    /// The region's SageMaker resources of `kind` that run now: InService notebooks and
    /// endpoints, InProgress jobs.
    pub async fn listed(&mut self, kind: Kind) -> Result<Vec<Listed>, CallError> {
        if !self.lists.contains_key(&kind) {
            self.failed()?;
            let read = self.list(kind).await;
            let listed = self.noted(read)?;
            self.lists.insert(kind, listed);
        }
        Ok(self.lists.get(&kind).cloned().unwrap_or_default())
    }

    async fn list(&self, kind: Kind) -> Result<Vec<Listed>, CallError> {
        use aws_sdk_sagemaker::types::{
            EndpointStatus, NotebookInstanceStatus, ProcessingJobStatus, TrainingJobStatus,
        };
        let sagemaker = &self.readers.sagemaker;
        let region = self.region.as_str();
        let mut out = Vec::new();
        let mut read = 0;
        match kind {
            Kind::Notebook => {
                let mut pages = sagemaker
                    .list_notebook_instances()
                    .status_equals(NotebookInstanceStatus::InService)
                    .max_results(100)
                    .into_paginator()
                    .send();
                while let Some(page) = pages.next().await {
                    let page = page.map_err(sagemaker_error("ListNotebookInstances"))?;
                    read = bounded(read, "SageMaker ListNotebookInstances", region)?;
                    out.extend(page.notebook_instances().iter().filter_map(|n| {
                        let instance_type = n.instance_type().map(|t| t.as_str().to_string());
                        listed(
                            n.notebook_instance_name(),
                            n.notebook_instance_arn(),
                            instance_type,
                            n.creation_time(),
                        )
                    }));
                }
            }
            Kind::TrainingJob => {
                let mut pages = sagemaker
                    .list_training_jobs()
                    .status_equals(TrainingJobStatus::InProgress)
                    .max_results(100)
                    .into_paginator()
                    .send();
                while let Some(page) = pages.next().await {
                    let page = page.map_err(sagemaker_error("ListTrainingJobs"))?;
                    read = bounded(read, "SageMaker ListTrainingJobs", region)?;
                    out.extend(
                        page.training_job_summaries().iter().filter_map(|j| {
                            listed(j.training_job_name(), j.training_job_arn(), None, j.creation_time())
                        }),
                    );
                }
            }
            Kind::ProcessingJob => {
                let mut pages = sagemaker
                    .list_processing_jobs()
                    .status_equals(ProcessingJobStatus::InProgress)
                    .max_results(100)
                    .into_paginator()
                    .send();
                while let Some(page) = pages.next().await {
                    let page = page.map_err(sagemaker_error("ListProcessingJobs"))?;
                    read = bounded(read, "SageMaker ListProcessingJobs", region)?;
                    out.extend(page.processing_job_summaries().iter().filter_map(|j| {
                        listed(j.processing_job_name(), j.processing_job_arn(), None, j.creation_time())
                    }));
                }
            }
            Kind::Endpoint => {
                let mut pages = sagemaker
                    .list_endpoints()
                    .status_equals(EndpointStatus::InService)
                    .max_results(100)
                    .into_paginator()
                    .send();
                while let Some(page) = pages.next().await {
                    let page = page.map_err(sagemaker_error("ListEndpoints"))?;
                    read = bounded(read, "SageMaker ListEndpoints", region)?;
                    out.extend(
                        page.endpoints()
                            .iter()
                            .filter_map(|e| listed(e.endpoint_name(), e.endpoint_arn(), None, e.creation_time())),
                    );
                }
            }
            Kind::Ec2 | Kind::Role => {}
        }
        Ok(out)
    }
}

/// A list call's summary of one resource, when it names it.
fn listed(
    name: Option<&str>,
    arn: Option<&str>,
    instance_type: Option<String>,
    created: Option<&aws_sdk_sagemaker::primitives::DateTime>,
) -> Option<Listed> {
    Some(Listed {
        name: name?.to_string(),
        arn: arn?.to_string(),
        instance_type,
        created: time(created),
    })
}

/// Counts a page read; past [`MAX_PAGES`], the listing stops with why (not a passing fault:
/// asking again would read as much).
fn bounded(read: usize, call: &str, region: &str) -> Result<usize, CallError> {
    if read >= MAX_PAGES {
        return Err(CallError {
            message: format!(
                "{call} in {region} answered more than {MAX_PAGES} pages: listing stopped there, so nothing is stopped \
                 on a partial view (narrow the policy's stop: regions or resources)"
            ),
            code: None,
            transient: false,
        });
    }
    Ok(read + 1)
}

/// A SageMaker resource of the project: its user, and every tag it carries.
pub(super) struct Tagged {
    pub user: Option<String>,
    pub all: Vec<(String, String)>,
}

/// The resource's tags when its project tag equals the project exactly; `None` otherwise
/// (another project's, untagged, or gone before its tags were read).
pub(super) async fn tagged(
    inv: &mut Inventory,
    kind: Kind,
    arn: &str,
    tags: Tags<'_>,
) -> Result<Option<Tagged>, CallError> {
    let ours = |all: &[(String, String)]| {
        all.iter()
            .find(|(k, _)| k == tags.project_key)
            .is_some_and(|(_, v)| v == tags.project)
    };
    let Some(indexed) = inv.tags_of(kind, arn).await?.filter(|all| ours(all)) else {
        return Ok(None);
    };
    // Judged again on what SageMaker itself answers, where the inventory asks it to.
    let Some(all) = inv.confirmed(kind, arn, indexed).await?.filter(|all| ours(all)) else {
        return Ok(None);
    };
    let value = |key: &str| all.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
    let user = value(tags.user_key).filter(|u| !u.is_empty()).map(str::to_string);
    Ok(Some(Tagged { user, all }))
}
