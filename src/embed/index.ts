/**
 * The published entry point of the `tollgate` package: run the gateway inside your own Node.js
 * process with your own tools (docs/guides/tools.md).
 */
export { createGateway, type EmbeddedGateway, type GatewayOptions, type ListenOptions } from './gateway.js'
export {
  tool,
  type ApprovalCheckContext,
  type EmbeddedToolContext,
  type StandardSchema,
  type ToolAttribution,
  type ToolOptions,
  type ToolProgress,
  type ToolRisk
} from './tool.js'
export type { Tool } from '../tools/contract.js'
