CREATE TABLE `job_turns` (
	`type` text NOT NULL,
	`org_id` text NOT NULL,
	`served_seq` integer NOT NULL,
	PRIMARY KEY(`type`, `org_id`)
);
--> statement-breakpoint
CREATE INDEX `jobs_org_claim` ON `jobs` (`org_id`,`status`,`run_after`);