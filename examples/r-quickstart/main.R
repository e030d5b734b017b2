# labbox quickstart in R: ridge regression on synthetic data at three regularisation strengths.
#
# The harness conventions as in examples/quickstart: a fixed seed, a time budget (from
# LABBOX_BUDGET, default 300 s), a one-condition pilot that prints TIME_ESTIMATE before the
# main loop, a time guard at 80% of the budget, `condition: X` then `name: value` lines on
# stdout, results.json (with jsonlite).
set.seed(42)
n_train <- 2000; n_test <- 1000; n_features <- 50; noise <- 0.5
conditions <- c(lambda_0.01 = 0.01, lambda_1 = 1, lambda_100 = 100)

w_true <- rnorm(n_features)
x <- matrix(rnorm((n_train + n_test) * n_features), ncol = n_features)
y <- as.vector(x %*% w_true + noise * rnorm(n_train + n_test))
x_tr <- x[1:n_train, ]; y_tr <- y[1:n_train]
x_te <- x[(n_train + 1):(n_train + n_test), ]; y_te <- y[(n_train + 1):(n_train + n_test)]

run_condition <- function(lambda) {
  for (i in 1:20) w <- solve(crossprod(x_tr) + lambda * diag(n_features), crossprod(x_tr, y_tr))
  list(train_mse = mean((x_tr %*% w - y_tr)^2), test_mse = mean((x_te %*% w - y_te)^2),
       weight_error = sqrt(sum((w - w_true)^2)))
}

start <- Sys.time()
budget <- as.numeric(Sys.getenv("LABBOX_BUDGET", "300"))
pilot <- system.time(run_condition(conditions[[1]]))[["elapsed"]]
cat(sprintf("TIME_ESTIMATE: %.2fs\n", pilot * length(conditions)))

results <- list()
for (name in names(conditions)) {
  elapsed <- as.numeric(difftime(Sys.time(), start, units = "secs"))
  if (elapsed > 0.8 * budget) {
    cat(sprintf("TIME_GUARD: %.1fs - saving partial results\n", elapsed))
    break
  }
  m <- run_condition(conditions[[name]])
  cat(sprintf("condition: %s\n", name))
  for (k in names(m)) cat(sprintf("%s: %.6f\n", k, m[[k]]))
  results[[name]] <- m
}
best <- names(results)[which.min(sapply(results, function(m) m$test_mse))]
cat(sprintf("best_test_mse: %.6f\n", results[[best]]$test_mse))
jsonlite::write_json(list(conditions = results, best = best), "results.json",
                     auto_unbox = TRUE, digits = NA)
