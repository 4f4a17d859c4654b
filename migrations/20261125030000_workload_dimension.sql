-- Workload as a dimension: what a SageMaker usage type says it is (Train: training, Host:
-- serving, Notebk: dev), stored with the usage type; otherwise the project's declared one.
alter table usage_types add column workload text check (workload in ('training', 'batch', 'serving', 'dev'));
