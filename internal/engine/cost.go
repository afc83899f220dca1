package engine

import (
	"strconv"
	"strings"

	"github.com/nexa-run/nexa/internal/provider"
	"github.com/nexa-run/nexa/internal/state"
)

// This file holds the money budget (--max-cost, state.Budgets.MaxCostUSD):
// the check before each provider request is in driver.request, next to
// the other budgets; what a resume may change of it is here.

// usd renders a dollar amount for messages: as many digits as it has, at
// least cents.
func usd(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if i := strings.IndexByte(s, '.'); i < 0 {
		s += ".00"
	} else if len(s)-i == 2 {
		s += "0"
	}
	return "$" + s
}

// checkPriced refuses a money budget the run could not keep: without a
// price for the provider's model nothing the run spends is known, and
// the budget would never stop it.
func (r *Runner) checkPriced(b state.Budgets) error {
	if b.MaxCostUSD <= 0 || provider.PriceKnown(r.provider) {
		return nil
	}
	id := r.provider.Identity()
	return refuse(CodeUsage, "--max-cost needs the price of the run's model, and none is known for model %s of provider %s%s; name it in a prices file (--prices FILE or NEXA_PRICES, docs/providers.md \"Cost and prices\")", id.Model, id.Kind, endpoint(id))
}

// endpoint names where a provider is reached, for messages: " at URL",
// or nothing for a provider without one (a script).
func endpoint(id state.ProviderIdentity) string {
	if id.BaseURL == "" {
		return ""
	}
	return " at " + id.BaseURL
}

// checkMaxCost is the resume check of --max-cost: omitted or the run's
// own keeps the budget, a higher one raises it (raiseMaxCost), and a
// lower one, or one for a run started without a money budget, is refused
// like any other changed budget: a resume never loosens a limit into
// being (from none) nor tightens one a person set.
func checkMaxCost(st *state.RunState, given *float64) error {
	have := st.Config.Budgets.MaxCostUSD
	if given == nil || *given == have || (have > 0 && *given > have) {
		return nil
	}
	if have == 0 {
		return refuse(CodeBudgetsChanged, "run %s has no --max-cost, this resume gives %s; a money budget is set when a run starts (omit the flag)", st.ID, usd(*given))
	}
	return refuse(CodeBudgetsChanged, "run %s has --max-cost %s, this resume gives %s; a resume can only raise --max-cost (omit the flag to keep the run's)", st.ID, usd(have), usd(*given))
}

// raiseMaxCost applies a resume's higher --max-cost to run (which passed
// checkMaxCost) and reports whether the run stopped at its old budget and
// may now continue: it is budget_exhausted and what it spent had reached
// the old --max-cost. Any other exhausted run stays terminal; a run that
// is not terminal simply keeps the higher budget.
func raiseMaxCost(run *state.RunState, given *float64) (raised, reopen bool) {
	old := run.Config.Budgets.MaxCostUSD
	if given == nil || *given <= old {
		return false, false
	}
	run.Config.Budgets.MaxCostUSD = *given
	spent, known := run.Usage.Cost()
	reopen = run.Status == state.StatusBudgetExhausted && (!known || spent >= old)
	return true, reopen
}
