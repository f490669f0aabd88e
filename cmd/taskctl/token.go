package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/taskd/taskd/pkg/client"
	"github.com/taskd/taskd/pkg/tokens"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// envToken names the environment variable that holds the bearer token.
const envToken = "TASKCTL_TOKEN"

// defineTokenCreate defines "token create": it stores a token through the
// TokenService and prints its bearer once; with --offline it makes a token
// locally and prints it with the line that grants it in a node's
// --tokens-file (which holds only the secret's SHA-256).
func defineTokenCreate(fs *flag.FlagSet) action {
	id := fs.String("id", "", "`ID` of the token (letters, digits, _ and -); default a random one")
	verbs := fs.String("verbs", "", "comma-separated `VERBS` among "+strings.Join(tokens.Verbs, ", ")+" (required)")
	identities := fs.String("identities", "", "comma-separated identities and prefixes ending in * (`SCOPES`); empty: all identities")
	description := fs.String("description", "", "free `TEXT` for people (stored tokens only)")
	offline := fs.Bool("offline", false, "make the token here, for a node's --tokens-file, without calling a node")
	return func(e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		if *verbs == "" {
			return usagef("--verbs is required")
		}
		vs := strings.Split(*verbs, ",")
		if err := tokens.ValidateVerbs(vs); err != nil {
			return usagef("--verbs: %v", err)
		}
		var scopes []string
		if *identities != "" {
			scopes = strings.Split(*identities, ",")
			if err := tokens.ValidateScopes(scopes); err != nil {
				return usagef("--identities: %v", err)
			}
		}
		if *id != "" {
			if err := tokens.ValidateID(*id); err != nil {
				return usagef("--id: %v", err)
			}
		}
		if *offline {
			if *description != "" {
				return usagef("--description is stored with the token in the cluster: not with --offline")
			}
			tid := *id
			if tid == "" {
				tid = tokens.NewID()
			}
			secret := tokens.NewSecret()
			fmt.Fprintf(e.stdout, "token: %s.%s\n", tid, secret)
			fmt.Fprintf(e.stdout, "tokens-file line: %s\n", tokens.FileLine(tid, secret, vs, scopes))
			fmt.Fprintln(e.stderr, "taskctl: the token is shown only now; add the line to each node's --tokens-file and send the nodes SIGHUP")
			return nil
		}
		c, err := e.taskClient()
		if err != nil {
			return err
		}
		ctx, cancel := e.rpcContext()
		defer cancel()
		tok, bearer, err := c.CreateToken(ctx, client.TokenSpec{ID: *id, Verbs: vs, Identities: scopes, Description: *description})
		if err != nil {
			return err
		}
		if e.opts.format == formatJSON {
			return writeJSON(e.stdout, &taskdv1.CreateTokenResponse{Token: tok.Proto, Bearer: bearer})
		}
		fmt.Fprintf(e.stdout, "token: %s\n", bearer)
		fmt.Fprintln(e.stderr, "taskctl: the token is shown only now; the cluster keeps only its hash")
		return nil
	}
}

// defineTokenList defines "token list".
func defineTokenList(fs *flag.FlagSet) action {
	return func(e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		c, err := e.taskClient()
		if err != nil {
			return err
		}
		ctx, cancel := e.rpcContext()
		defer cancel()
		toks, err := c.Tokens(ctx)
		if err != nil {
			return err
		}
		resp := &taskdv1.ListTokensResponse{}
		for _, t := range toks {
			resp.Tokens = append(resp.Tokens, t.Proto)
		}
		if e.opts.format == formatJSON {
			return writeJSON(e.stdout, resp)
		}
		return writeTokensTable(e.stdout, resp.GetTokens())
	}
}

// defineTokenRevoke defines "token revoke".
func defineTokenRevoke(fs *flag.FlagSet) action {
	return func(e *env, args []string) error {
		if len(args) != 1 {
			return usagef("want one token ID")
		}
		c, err := e.taskClient()
		if err != nil {
			return err
		}
		ctx, cancel := e.rpcContext()
		defer cancel()
		if err := c.RevokeToken(ctx, args[0]); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "revoked %s\n", args[0])
		return nil
	}
}

func writeTokensTable(w io.Writer, toks []*taskdv1.Token) error {
	tw := newTable(w)
	row(tw, "ID", "SOURCE", "VERBS", "IDENTITIES", "CREATED", "BY", "DESCRIPTION")
	for _, t := range toks {
		ids := "*"
		if len(t.GetIdentities()) > 0 {
			ids = strings.Join(t.GetIdentities(), ",")
		}
		row(tw, t.GetId(), strings.ToLower(strings.TrimPrefix(t.GetSource().String(), "TOKEN_SOURCE_")),
			strings.Join(t.GetVerbs(), ","), ids, formatTime(t.GetCreatedAt()), t.GetCreatedBy(), t.GetDescription())
	}
	return tw.Flush()
}
