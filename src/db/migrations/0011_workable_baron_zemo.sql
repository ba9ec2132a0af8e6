DROP TABLE `job_turns`;--> statement-breakpoint
DROP TABLE `jobs`;