"""OmniVideoBench: its release read into avjudge's questions, its paper's answer rule, its tables (`suite`)."""

from .suite import OmniVideoBench, duration_bucket, paper_answer, seconds

__all__ = ["OmniVideoBench", "duration_bucket", "paper_answer", "seconds"]
