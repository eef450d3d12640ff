"""The prediction type (spec/prediction-format.md): documents, datasets, and the questions and builds of its
functions."""
